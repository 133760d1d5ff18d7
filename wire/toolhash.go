package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
)

// HeaderToolHash carries, on a tool call, the ToolHash of the tool's
// schemas as the caller knows them: a generated client sends the hash of
// the tool list it was generated from. The broker compares it with the
// hash of the tool the child in the caller's scope lists now, and answers a
// difference with KindStaleClient (409) instead of calling, so a client
// whose types went stale fails naming the tool rather than making a call
// its types no longer describe. Without the header no check is made.
const HeaderToolHash = "Mcpx-Tool-Hash"

// ToolHash identifies what a caller's types of a tool depend on: its
// inputSchema and outputSchema (the description may change freely). It is
// "sha256:" and the first 16 hex digits of the SHA-256 of both schemas,
// each compacted (insignificant whitespace removed; member order kept) and
// prefixed by its length in bytes and a colon. A missing schema is empty;
// one that is not JSON is hashed as it is.
func ToolHash(inputSchema, outputSchema json.RawMessage) string {
	h := sha256.New()
	for _, s := range []json.RawMessage{inputSchema, outputSchema} {
		var c bytes.Buffer
		if json.Compact(&c, s) != nil {
			c.Reset()
			c.Write(bytes.TrimSpace(s))
		}
		h.Write([]byte(strconv.Itoa(c.Len()) + ":"))
		h.Write(c.Bytes())
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:16]
}

// ToolHashOf is ToolHash of an MCP Tool object's schemas; a tool that is not
// an object hashes as one with neither.
func ToolHashOf(tool json.RawMessage) string {
	var t struct {
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	json.Unmarshal(tool, &t) //nolint:errcheck // see above
	return ToolHash(t.InputSchema, t.OutputSchema)
}
