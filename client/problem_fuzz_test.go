package client

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"mcpx.dev/mcpx/wire"
)

func errorResponse(status int, body []byte) *http.Response {
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Body: io.NopCloser(bytes.NewReader(body))}
}

// FuzzProblemRoundTrip: a problem the server writes is read back whole,
// and any body at all (a proxy's page, a torn document) still reads as a
// problem with the answer's status and a detail to show.
func FuzzProblemRoundTrip(f *testing.F) {
	f.Add(400, "bad-request", "Bad request", "cwd is not absolute", "Mcpx-Cwd", "", 0, 0, []byte(`{"type":"x"}`))
	f.Add(502, "child-failed", "Child failed", "the child crashed", "", "panic: boom\n", -32603, 0, []byte("<html>bad gateway</html>"))
	f.Add(503, "exhausted", "Exhausted", "no room", "", "", 0, 1, []byte(`{"detail":"x","status":0}`))
	f.Add(401, "unauthorized", "Unauthorized", "é\u2028\x00", "", "", 0, 0, []byte{})
	f.Fuzz(func(t *testing.T, status int, kind, title, detail, field, stderr string, rpc, retry int, junk []byte) {
		if status < 400 || status > 599 || detail == "" {
			return
		}
		want := wire.Problem{Type: wire.ProblemTypeBase + kind, Title: title, Status: status, Detail: detail,
			Field: field, StderrTail: stderr, RPCCode: rpc, RetryAfter: retry}
		body, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		got := readProblem(errorResponse(status, body))
		// encoding/json replaces invalid UTF-8; compare with what it wrote.
		var sent wire.Problem
		json.Unmarshal(body, &sent)
		if *got != sent {
			t.Errorf("read back %+v, want %+v", *got, sent)
		}
		p := readProblem(errorResponse(status, junk))
		if p == nil || p.Status == 0 || p.Detail == "" {
			t.Errorf("body %q read as %+v: want a status and a detail", junk, p)
		}
	})
}
