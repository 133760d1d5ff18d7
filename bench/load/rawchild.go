package main

import (
	"bufio"
	"encoding/json"
	"io"
)

// envRawChild=1 makes this binary serve serveRawChild on stdio and exit.
const envRawChild = "MCPX_BENCH_RAW_CHILD"

// serveRawChild is a minimal MCP stdio server with one tool, echo: a
// hand-written loop with one encoding/json decode per message. It exists to
// separate what the broker costs from what the go-sdk demo child costs per
// call. It answers initialize with the version the client asked for, ping,
// tools/list and tools/call, and ignores notifications.
func serveRawChild(in io.Reader, out io.Writer) int {
	br := bufio.NewReaderSize(in, 64<<10)
	bw := bufio.NewWriterSize(out, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			return 0
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Name            string `json:"name"`
				Arguments       struct {
					Message string `json:"message"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &msg) != nil || msg.ID == nil || msg.Method == "" {
			continue // notifications, and responses we never asked for
		}
		bw.WriteString(`{"jsonrpc":"2.0","id":`)
		bw.Write(msg.ID)
		switch msg.Method {
		case "initialize":
			v, _ := json.Marshal(msg.Params.ProtocolVersion)
			bw.WriteString(`,"result":{"protocolVersion":`)
			bw.Write(v)
			bw.WriteString(`,"capabilities":{"tools":{}},"serverInfo":{"name":"bench-raw","version":"0"}}}`)
		case "tools/list":
			bw.WriteString(`,"result":{"tools":[{"name":"echo","description":"Returns the message.","inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}}]}}`)
		case "tools/call":
			if msg.Params.Name != "echo" {
				bw.WriteString(`,"error":{"code":-32602,"message":"unknown tool"}}`)
				break
			}
			text, _ := json.Marshal(msg.Params.Arguments.Message)
			bw.WriteString(`,"result":{"content":[{"type":"text","text":`)
			bw.Write(text)
			bw.WriteString(`}]}}`)
		default:
			bw.WriteString(`,"result":{}}`)
		}
		bw.WriteByte('\n')
		if br.Buffered() == 0 {
			if bw.Flush() != nil {
				return 0
			}
		}
		if err != nil {
			return 0
		}
	}
}
