package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
)

// The tool documents are the caller's: a caller restricted to some servers
// gets only theirs in the combined document, and not-found for the others'.
func TestToolDocumentsOnlyOfServersTheCallerMayUse(t *testing.T) {
	proctest.CheckNoLeaks(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(t)}
	raw, _ := json.Marshal(map[string]any{"servers": map[string]any{
		"a": map[string]any{"command": exe, "env": env, "scope": "global"},
		"b": map[string]any{"command": exe, "env": env, "scope": "global"},
	}})
	cfg, err := config.Parse(raw, "test.json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(broker.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b.Close(ctx) //nolint:errcheck // the leak check judges
	})
	h := newServer(Options{Broker: b}).router(routes())
	get := func(c broker.Caller, path string) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(context.WithValue(t.Context(), callerKey{}, c), "GET", path, nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	servers := func(c broker.Caller) []string {
		w := get(c, "/v1/openapi.json")
		if w.Code != http.StatusOK {
			t.Fatalf("%s: status %d: %s", c.Name, w.Code, w.Body)
		}
		var d struct {
			Tags []struct {
				Name string `json:"name"`
			} `json:"tags"`
			Paths       map[string]any `json:"paths"`
			Unavailable []any          `json:"x-mcpx-unavailable"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		if d.Unavailable != nil {
			t.Errorf("%s: servers unavailable: %v", c.Name, d.Unavailable) // not even named
		}
		var names []string
		for _, tag := range d.Tags {
			names = append(names, tag.Name)
		}
		for p := range d.Paths {
			if server := strings.Split(p, "/")[3]; !slices.Contains(names, server) {
				t.Errorf("%s: path %s of a server not listed", c.Name, p)
			}
		}
		return names
	}
	owner := broker.Caller{Name: "owner", Owner: true, Rights: rights.All()}
	onlyA := broker.Caller{Name: "remote", Via: "tailnet", Rights: rights.Rights{{Servers: []string{"a"}}}}
	if got := servers(owner); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("the owner's document has servers %v", got)
	}
	if got := servers(onlyA); !slices.Equal(got, []string{"a"}) {
		t.Errorf("a caller restricted to a has servers %v", got)
	}
	if w := get(onlyA, "/v1/servers/b/openapi.json"); w.Code != http.StatusNotFound {
		t.Errorf("b's document for a caller restricted to a: status %d", w.Code)
	}
	if w := get(onlyA, "/v1/servers/a/openapi.json"); w.Code != http.StatusOK {
		t.Errorf("a's document for a caller restricted to a: status %d", w.Code)
	}
}
