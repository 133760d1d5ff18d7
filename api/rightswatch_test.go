package api_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/internal/sse"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/wire"
)

// openStream opens an SSE request with a bearer token on d's TCP listener
// and returns its decoder; the stream is closed at the end of the test.
func openStream(t *testing.T, d *apitest.Daemon, tok, method, path, body string) *sse.Decoder {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second) // a hang fails, it does not time the test
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, method, d.TCP.Base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", wire.MediaEventStream)
	req.Header.Set(wire.HeaderClient, "api-test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
	}
	return sse.NewDecoder(bufio.NewReader(resp.Body), 1<<20)
}

// next returns the stream's next event, skipping keep-alive comments.
func next(t *testing.T, dec *sse.Decoder) sse.Event {
	t.Helper()
	ev, err := dec.Next()
	if err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	return ev
}

// TestRevokedTokenEndsItsEventStream (real-use 21): an /v1/events stream
// opened with a token ends, with a final end event saying why, when the
// token is revoked (at once: a revocation wakes every stream's watch).
func TestRevokedTokenEndsItsEventStream(t *testing.T) {
	is, err := auth.Open(auth.Options{Dir: t.TempDir(), Hostname: "box"})
	if err != nil {
		t.Fatal(err)
	}
	d := apitest.Start(t, apitest.Options{Tokens: is, API: func(o *api.Options) { o.Reidentify, o.KeepAlive = time.Hour, 10*time.Millisecond }})
	m := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "watcher", Rule: rights.Rule{Servers: []string{"*"}}, TTL: "1h"})
	dec := openStream(t, d, m.Token, "GET", "/v1/events", "")
	if r := d.Unix.Do(t, "DELETE", "/v1/tokens/"+m.Info.ID, ""); r.StatusCode != 200 {
		t.Fatalf("revoke: %d %s", r.StatusCode, r.Bytes)
	}
	ev := next(t, dec)
	if ev.Event != wire.StreamEnd || !strings.Contains(string(ev.Data), "revoked") {
		t.Fatalf("after the revoke: %s %s, want an end event saying revoked", ev.Event, ev.Data)
	}
	if ev, err := dec.Next(); err == nil {
		t.Errorf("the stream goes on after its end event: %s %s", ev.Event, ev.Data)
	}
}

// TestExpiredTokenEndsItsStreamedCall (real-use 21): a streamed call whose
// token expires mid-call is ended by the periodic re-identification with
// an error event, and its child's call is cancelled.
func TestExpiredTokenEndsItsStreamedCall(t *testing.T) {
	proctest.CheckNoLeaks(t)
	clk := &testClock{}
	is, err := auth.Open(auth.Options{Dir: t.TempDir(), Hostname: "box", Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "global"}`}), Tokens: is,
		API: func(o *api.Options) { o.Reidentify = 10 * time.Millisecond }})
	m := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "caller", Rule: rights.Rule{Servers: []string{"demo"}}, TTL: "1h"})
	dec := openStream(t, d, m.Token, "POST", "/v1/servers/demo/tools/sleep", `{"ms": 600000}`)
	if ev := next(t, dec); ev.Event != wire.StreamCall {
		t.Fatalf("first event %s %s, want call", ev.Event, ev.Data)
	}
	clk.set(2 * time.Hour)
	for {
		ev := next(t, dec)
		if ev.Event == wire.StreamProgress {
			continue
		}
		if ev.Event != wire.StreamError || !strings.Contains(string(ev.Data), "expired") {
			t.Fatalf("after the token expired: %s %s, want an error event saying expired", ev.Event, ev.Data)
		}
		break
	}
}
