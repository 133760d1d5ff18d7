package client

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"mcpx.dev/mcpx/api/wire"
	"mcpx.dev/mcpx/internal/sse"
)

// maxEventLine bounds one line of an event stream: a result is one data
// line per line of the child's JSON, which encoding/json writes as one.
const maxEventLine = 256 << 20

func isEventStream(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == wire.MediaEventStream
}

// readCallEvents reads a streamed tool call (wire.Events): progress events,
// then one result or error event, whose result it returns.
func readCallEvents(r io.Reader, onProgress func(json.RawMessage)) (json.RawMessage, error) {
	d := sse.NewDecoder(bufio.NewReader(r), maxEventLine)
	for {
		ev, err := d.Next()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the broker ended the stream without a result")
		}
		if err != nil {
			return nil, err
		}
		switch ev.Event {
		case wire.EventProgress:
			if onProgress != nil {
				onProgress(ev.Data)
			}
		case wire.EventResult:
			return ev.Data, nil
		case wire.EventError:
			var p wire.Problem
			if err := json.Unmarshal(ev.Data, &p); err != nil {
				return nil, fmt.Errorf("undecodable error event: %s", ev.Data)
			}
			return nil, &p
		}
	}
}
