package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/wire"
)

// serveIdentified serves the API on a fresh loopback listener whose callers
// are named by id alone (as the tailnet listener's are) and returns its URL.
func serveIdentified(t *testing.T, id api.Identify) string {
	t.Helper()
	return serveIdentifiedTokens(t, id, nil)
}

// serveIdentifiedTokens is serveIdentified with a token issuer.
func serveIdentifiedTokens(t *testing.T, id api.Identify, is *auth.Issuer) string {
	t.Helper()
	b, err := broker.New(broker.Options{Config: &config.Config{Servers: map[string]*config.Server{}}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		h := api.New(api.Options{Broker: b, Version: "test", Token: apitest.Token, Tokens: is})
		if err := api.Serve(ctx, ln, h, api.ServeOptions{Identify: id, DrainTimeout: time.Second}); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		b.Close(context.Background())
	})
	return "http://" + ln.Addr().String()
}

func get(t *testing.T, url string, headers ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(wire.HeaderClient, "api-test") // the browser guard's
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// TestIdentifyReplacesListenerRules: a listener served with Identify names
// its callers with it alone. Its caller reaches the routes with the rights
// it was given and no token, even over loopback (the owner's token is
// refused there); what it refuses is a 403,
// an error of its own is a 403 too (deny by default), and a request with
// an Origin header never reaches it.
func TestIdentifyReplacesListenerRules(t *testing.T) {
	var calls sync.Map
	url := serveIdentified(t, func(r *http.Request) (broker.Caller, error) {
		calls.Store(r.URL.Path, true)
		switch r.URL.Query().Get("who") {
		case "peer":
			return broker.Caller{Name: "dev@example.com", Via: wire.ViaTailnet, Rights: rights.Rights{{Servers: []string{}, Roots: []string{"/srv"}}}}, nil
		case "refused":
			return broker.Caller{}, &broker.Error{Kind: broker.KindForbidden, Op: "authenticate", Msg: "no grant"}
		}
		return broker.Caller{}, errors.New("whois failed")
	})

	code, body := get(t, url+"/v1/whoami?who=peer")
	var w wire.Whoami
	if code != 200 || json.Unmarshal(body, &w) != nil {
		t.Fatalf("whoami: %d %s", code, body)
	}
	if w.Caller.Name != "dev@example.com" || w.Caller.Via != wire.ViaTailnet || w.Caller.Owner || w.Daemon != nil {
		t.Errorf("whoami = %+v, want the identified caller, not the owner", w)
	}
	for _, q := range []string{"refused", "broken"} {
		code, body := get(t, url+"/v1/servers?who="+q)
		if code != http.StatusForbidden || !strings.Contains(string(body), wire.ProblemTypeBase) {
			t.Errorf("who=%s: %d %s, want a 403 problem", q, code, body)
		}
	}
	// The owner's token is for loopback TCP only: here it admits nobody.
	if code, body := get(t, url+"/v1/servers?who=peer", "Authorization", "Bearer "+apitest.Token); code != http.StatusUnauthorized {
		t.Errorf("with the owner's token: %d %s, want 401", code, body)
	}
	if code, body := get(t, url+"/v1/origin?who=peer", "Origin", "http://evil.example"); code != http.StatusForbidden {
		t.Errorf("with Origin: %d %s, want 403", code, body)
	}
	if _, ok := calls.Load("/v1/origin"); ok {
		t.Error("Identify was asked about a request with an Origin header")
	}
}
