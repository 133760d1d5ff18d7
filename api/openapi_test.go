package api_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"testing"

	"mcpx.dev/mcpx/openapi"
)

// /openapi.json serves the generated document, compressed like every JSON
// answer, and only to authenticated callers.
func TestServeOpenAPI(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	want, err := openapi.Broker(openapi.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // built once, the same bytes every time
		req, _ := http.NewRequestWithContext(t.Context(), "GET", d.unix.base+"/openapi.json", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := d.unix.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("status %d, Content-Encoding %q, Content-Type %q", resp.StatusCode,
				resp.Header.Get("Content-Encoding"), resp.Header.Get("Content-Type"))
		}
		gr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(gr)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("served %d bytes, not the generated document (%d bytes)", len(got), len(want))
		}
	}
	r := d.tcp.do(t, "GET", "/openapi.json", "", "Authorization", "Bearer wrong")
	if p := r.problem(t); p.Status != 401 {
		t.Errorf("TCP with a wrong token: %+v", p)
	}
}
