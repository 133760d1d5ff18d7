package conformance

import (
	"bufio"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

var update = flag.Bool("update", false, "rewrite testdata/direct-*.txt from this run")

// TestConformanceDirect runs every leg of the suite against go-sdk's
// conformance server directly and compares which scenarios pass with
// testdata/direct-<revision>.txt: the reference a server behind mcpx must
// match (go test -run TestConformanceDirect -update rewrites it).
func TestConformanceDirect(t *testing.T) {
	proctest.CheckNoLeaks(t)
	for _, leg := range Legs {
		t.Run(leg.Requirements, func(t *testing.T) {
			url := StartEverything(t, leg.Stateless)
			res := Run(t, url, Options{Requirements: leg.Requirements})
			got := Table(res)
			t.Logf("go-sdk everything server, %s, stateless=%t:\n%s", leg.Requirements, leg.Stateless, got)
			golden := filepath.Join("testdata", "direct-"+leg.Requirements+".txt")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("scenarios against the server directly differ from %s (-update rewrites it):\ngot:\n%s\nwant:\n%s", golden, got, want)
				for name, r := range res {
					if !r.OK() {
						t.Logf("%s: %s", name, r)
					}
				}
			}
		})
	}
}

// TestDNSRebindingThroughProxy: the token proxy keeps the verdict of the
// suite's DNS-rebinding scenario, which sends Host and Origin of its own.
func TestDNSRebindingThroughProxy(t *testing.T) {
	proctest.CheckNoLeaks(t)
	url := StartEverything(t, false)
	res := Run(t, Proxy(t, url, "tok"), Options{Scenarios: []string{"dns-rebinding-protection"}})
	if r, ok := res["dns-rebinding-protection"]; !ok || !r.OK() || r.Passed != 2 {
		t.Fatalf("dns-rebinding-protection through the proxy: %+v (ran: %v)", r, ok)
	}
}

func TestReadResults(t *testing.T) {
	dir := t.TempDir()
	testenv.WriteFiles(t, dir, map[string]string{
		"server-ping-2026-12-01T15-14-31-095Z/checks.json": `[
			{"id":"ping","status":"SUCCESS"},{"id":"server-info","status":"INFO"}]`,
		"server-tools-call-error-2026-12-01T15-14-31-100Z/checks.json": `[
			{"id":"a","status":"SUCCESS"},{"id":"b","status":"FAILURE","errorMessage":"no isError"},
			{"id":"c","status":"WARNING"}]`,
		"server-tasks-status-notifications-2026-12-01T15-14-31-200Z/checks.json": `[]`,
		// a second run of one scenario adds up
		"server-ping-2026-12-01T15-15-00-000Z/checks.json": `[{"id":"ping","status":"FAILURE","errorMessage":"timeout"}]`,
		"not-a-result/checks.json":                         `[{"id":"x","status":"FAILURE"}]`,
	})
	res, err := readResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Result{
		"ping":                       {Passed: 1, Failed: 1, Failures: []string{"ping: timeout"}},
		"tools-call-error":           {Passed: 1, Failed: 1, Warnings: 1, Failures: []string{"b: no isError"}},
		"tasks-status-notifications": {},
	}
	if len(res) != len(want) {
		t.Fatalf("got %d scenarios %v, want %d", len(res), res, len(want))
	}
	for name, w := range want {
		g := res[name]
		if g.Passed != w.Passed || g.Failed != w.Failed || g.Warnings != w.Warnings || !slices.Equal(g.Failures, w.Failures) {
			t.Errorf("%s = %+v, want %+v", name, g, w)
		}
	}
	if got := Passing(res); !slices.Equal(got, []string{"tasks-status-notifications"}) {
		t.Errorf("Passing = %v", got)
	}
	if _, err := readResults(filepath.Join(dir, "absent")); err != nil {
		t.Errorf("no results directory: %v", err)
	}
}

func TestLost(t *testing.T) {
	direct := map[string]Result{"a": {Passed: 1}, "b": {Passed: 2}, "c": {Failed: 1}, "d": {Passed: 1}}
	through := map[string]Result{"a": {Passed: 1}, "b": {Passed: 1, Failed: 1}, "c": {Passed: 1}}
	if got := Lost(direct, through); !slices.Equal(got, []string{"b", "d"}) {
		t.Errorf("Lost = %v, want [b d]", got)
	}
}

func TestProxy(t *testing.T) {
	type seen struct{ host, origin, auth, path string }
	got := make(chan seen, 4)
	release := make(chan struct{})
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Host, r.Header.Get("Origin"), r.Header.Get("Authorization"), r.URL.RequestURI()}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-release // the proxy must pass the first event on before the stream ends
		io.WriteString(w, "data: last\n\n")
	}))
	defer backend.Close()
	defer close(release)
	target := strings.TrimPrefix(backend.URL, "http://")
	purl := Proxy(t, backend.URL+"/mcp/demo?x=1", "s3cret")
	if !strings.HasSuffix(purl, "/mcp/demo?x=1") {
		t.Fatalf("proxy URL %s keeps neither path nor query", purl)
	}
	self := strings.TrimSuffix(strings.TrimPrefix(purl, "http://"), "/mcp/demo?x=1")

	for _, tt := range []struct {
		name                 string
		host, origin         string
		wantHost, wantOrigin string
	}{
		{"own host and origin name the target", "", "http://" + self, target, "http://" + target},
		{"foreign host and origin pass unchanged", "evil.example.com", "http://evil.example.com", "evil.example.com", "http://evil.example.com"},
		{"no origin stays none", "", "", target, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, purl, nil)
			if tt.host != "" {
				req.Host = tt.host
			}
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			if err != nil || line != "data: first\n" {
				t.Fatalf("first line %q, %v (not streamed?)", line, err)
			}
			s := <-got
			if s.host != tt.wantHost || s.origin != tt.wantOrigin || s.auth != "Bearer s3cret" || s.path != "/mcp/demo?x=1" {
				t.Errorf("backend saw %+v; want host %q, origin %q, the token and the path", s, tt.wantHost, tt.wantOrigin)
			}
			release <- struct{}{}
		})
	}
}

// TestNewWarnings: a check that warns through a proxy and not directly is
// new, counted per check id; a warning both have, or one of a scenario
// that fails, is not.
func TestNewWarnings(t *testing.T) {
	direct := map[string]Result{
		"a": {Passed: 2, Warnings: 1, Warned: []string{"resume: no response"}},
		"b": {Passed: 1},
		"c": {Passed: 1},
		"d": {Failed: 1},
	}
	through := map[string]Result{
		"a": {Passed: 2, Warnings: 2, Warned: []string{"retry: none", "resume: no response"}},
		"b": {Passed: 1, Warnings: 2, Warned: []string{"x: one", "x: two"}},
		"c": {Failed: 1, Warnings: 1, Warned: []string{"y: z"}},
		"d": {Passed: 1, Warnings: 1, Warned: []string{"w: v"}},
	}
	got := NewWarnings(direct, through)
	want := []string{"a: retry: none", "b: x: one", "b: x: two"}
	if !slices.Equal(got, want) {
		t.Errorf("NewWarnings = %q, want %q", got, want)
	}
}
