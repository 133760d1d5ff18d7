package pool_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/pool"
)

// The url-server carry-over tests (upgrade and survive): the remote, a
// stateful (handshake-era) go-sdk streamable HTTP server, runs in the
// test's own process, across both images of the upgrading daemon or the
// killed daemon and the next, and records what it is sent.
const (
	envRemoteURL     = "MCPX_TEST_REMOTE_URL"     // the remote's endpoint: the stand-in daemons' server is a url server
	envUpgradeExpire = "MCPX_TEST_UPGRADE_EXPIRE" // "1": the new image ends the remote session before Adopt
)

// remoteDef is the url server of the upgrade tests; changed, its headers
// differ.
func remoteDef(url string, changed bool) pool.Server {
	h := "before"
	if changed {
		h = "after"
	}
	return pool.Server{Name: "demo", URL: url, Headers: map[string]string{"X-Test": h}}
}

// remoteSeen is one HTTP request the remote got.
type remoteSeen struct {
	HTTP, Session, RPC, Header string // HTTP method, Mcp-Session-Id, JSON-RPC method, X-Test
}

type recordingRemote struct {
	url  string
	mu   sync.Mutex
	seen []remoteSeen
}

// startRemote serves the demo over stateful streamable HTTP.
func startRemote(t *testing.T) *recordingRemote {
	t.Helper()
	srv := demo.NewServer()
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	r := &recordingRemote{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		var m struct{ Method string }
		json.Unmarshal(body, &m)
		r.mu.Lock()
		r.seen = append(r.seen, remoteSeen{req.Method, req.Header.Get("Mcp-Session-Id"), m.Method, req.Header.Get("X-Test")})
		r.mu.Unlock()
		handler.ServeHTTP(w, req)
	}))
	t.Cleanup(ts.Close)
	r.url = ts.URL
	return r
}

func (r *recordingRemote) requests() []remoteSeen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// sessions returns the remote's requests' session ids in the order first
// seen, and how many initialize requests it got.
func (r *recordingRemote) sessions() (ids []string, inits int) {
	for _, s := range r.requests() {
		if s.RPC == "initialize" {
			inits++
		}
		if s.Session != "" && !slices.Contains(ids, s.Session) {
			ids = append(ids, s.Session)
		}
	}
	return ids, inits
}

// calls returns the session id of each tools/call, in order.
func (r *recordingRemote) calls() []string {
	var out []string
	for _, s := range r.requests() {
		if s.RPC == "tools/call" {
			out = append(out, s.Session)
		}
	}
	return out
}

// upgradeURL runs t's upgrade with the url server of r.
func upgradeURL(t *testing.T, r *recordingRemote, env ...string) pool.InstanceStatus {
	t.Helper()
	_, before := upgradeWithAChild(t, append(env, envRemoteURL+"="+r.url)...)
	if before.Pid != 0 {
		t.Fatalf("the url instance has pid %d", before.Pid)
	}
	return before
}

// callAfter is the new image's call: the demo's counter, which goes on
// from 2 (it counts in the remote, whatever the session).
func callAfter(t *testing.T, p *pool.Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if got, err := call(ctx, p, pool.Target{Server: "demo", Key: "global"}, "counter", nil); err != nil || got != "3" {
		t.Errorf("counter after the upgrade: %q, %v; want 3", got, err)
	}
}

// TestUpgradeCarriesURLSession: an idle url instance is handed over and
// adopted: the new image goes on in the remote's session (the same
// Mcp-Session-Id, no second initialize), and ends it at Close.
func TestUpgradeCarriesURLSession(t *testing.T) {
	if os.Getenv(envUpgraded) != "" {
		proctest.CheckNoLeaks(t)
		p, res, before := upgraded(t, false)
		if len(res.Adopted) != 1 || len(res.Replaced) != 0 {
			t.Fatalf("adopted %v, replaced %v; want one adopted", res.Adopted, res.Replaced)
		}
		if after := statusOf(t, p, "global"); after.ID != before.ID || after.State != before.State {
			t.Errorf("adopted instance %+v; want %s, %s", after, before.ID, before.State)
		}
		callAfter(t, p)
		return
	}
	proctest.CheckNoLeaks(t)
	r := startRemote(t)
	upgradeURL(t, r)
	ids, inits := r.sessions()
	if len(ids) != 1 || inits != 1 {
		t.Fatalf("the remote saw sessions %q and %d initialize requests; want one of each: %+v", ids, inits, r.requests())
	}
	if calls := r.calls(); len(calls) != 3 || slices.ContainsFunc(calls, func(s string) bool { return s != ids[0] }) {
		t.Errorf("tools/call sessions %q; want 3 in %s", calls, ids[0])
	}
	// The DELETE ends the session: no message is posted after it. (A GET
	// the new image cancelled at Close may still reach the remote after
	// the DELETE, on its own connection: seen under load in CI.)
	reqs := r.requests()
	del := slices.IndexFunc(reqs, func(s remoteSeen) bool { return s.HTTP == http.MethodDelete })
	if del < 0 || reqs[del].Session != ids[0] {
		t.Fatalf("requests %+v; want the new image's DELETE of %s at Close", reqs, ids[0])
	}
	if i := slices.IndexFunc(reqs[del+1:], func(s remoteSeen) bool { return s.HTTP != http.MethodGet }); i >= 0 {
		t.Errorf("after the DELETE of %s the remote got %+v; want nothing posted", ids[0], reqs[del+1+i])
	}
}

// TestUpgradeReplacesAChangedURLServer: a url instance whose definition
// changed (its headers) is not adopted: the next call opens a new session,
// with the new headers.
func TestUpgradeReplacesAChangedURLServer(t *testing.T) {
	if os.Getenv(envUpgraded) != "" {
		proctest.CheckNoLeaks(t)
		p, res, _ := upgraded(t, true)
		if len(res.Adopted) != 0 || len(res.Replaced) != 1 {
			t.Fatalf("adopted %v, replaced %v; want one replaced", res.Adopted, res.Replaced)
		}
		callAfter(t, p)
		return
	}
	proctest.CheckNoLeaks(t)
	r := startRemote(t)
	upgradeURL(t, r)
	ids, inits := r.sessions()
	if len(ids) != 2 || inits != 2 {
		t.Fatalf("the remote saw sessions %q and %d initialize requests; want two of each: %+v", ids, inits, r.requests())
	}
	for _, s := range r.requests() {
		if s.Session == ids[1] && s.Header != "after" {
			t.Errorf("%+v in the new session has the old headers", s)
		}
	}
	if calls := r.calls(); len(calls) != 3 || calls[2] != ids[1] {
		t.Errorf("tools/call sessions %q; want the last in the new session %s", calls, ids[1])
	}
}

// TestUpgradeURLSessionExpired: the remote forgets the session between
// the two images: the adopted instance's next call goes through a new
// session, without failing or hanging.
func TestUpgradeURLSessionExpired(t *testing.T) {
	if os.Getenv(envUpgraded) != "" {
		proctest.CheckNoLeaks(t)
		endHandedSession(t)
		p, res, _ := upgraded(t, false)
		if len(res.Adopted) != 1 {
			t.Fatalf("adopted %v, replaced %v; want one adopted", res.Adopted, res.Replaced)
		}
		callAfter(t, p)
		return
	}
	proctest.CheckNoLeaks(t)
	r := startRemote(t)
	upgradeURL(t, r, envUpgradeExpire+"=1")
	ids, inits := r.sessions()
	if len(ids) != 2 || inits != 2 {
		t.Fatalf("the remote saw sessions %q and %d initialize requests; want two of each: %+v", ids, inits, r.requests())
	}
	if calls := r.calls(); len(calls) < 3 || calls[len(calls)-1] != ids[1] {
		t.Errorf("tools/call sessions %q; want the last in the new session %s", calls, ids[1])
	}
}

// endHandedSession ends, at the remote, the session the handoff state
// hands over: the remote forgot it (expired it) while the daemon upgraded.
func endHandedSession(t *testing.T) {
	t.Helper()
	var st pool.HandoffState
	b, err := os.ReadFile(os.Getenv(envUpgraded))
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil || len(st.Children) != 1 || !st.Children[0].URL || st.Children[0].Session.SessionID == "" {
		t.Fatalf("handoff state %s: %v; want one url instance with a session", b, err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, os.Getenv(envRemoteURL), nil)
	req.Header.Set("Mcp-Session-Id", st.Children[0].Session.SessionID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("ending the handed-over session: %s", resp.Status)
	}
}

// killedWithAURLSession starts survivingDaemon with the url server of r
// and SIGKILLs it mid-call, once its survive file records the instance;
// it returns the state directory's parent.
func killedWithAURLSession(t *testing.T, r *recordingRemote) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "state"), 0o700); err != nil {
		t.Fatal(err)
	}
	d := exec.Command(os.Args[0], "-test.run=^$")
	d.Env = append(os.Environ(), envPoolDaemon+"=survive", envSurviveDir+"="+dir, envSurvive+"=1", envRemoteURL+"="+r.url, proctest.Env(t))
	out, err := d.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d.Stderr = os.Stderr
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err == nil {
		// Mid-call means the remote has the sleep call (the third): the
		// pool counts a call in flight before its POST is on the wire.
		testenv.WaitFor(t, "the remote to receive the sleep call", func() bool { return len(r.calls()) >= 3 })
	}
	d.Process.Kill()
	d.Wait()
	if err != nil || strings.TrimSpace(line) != "0" {
		t.Fatalf("the daemon reported pid %q, %v; want 0, a url instance's", line, err)
	}
	return dir
}

// TestSurviveCarriesURLSession: with Survive, the url instance of a
// daemon SIGKILLed mid-call is adopted by the next daemon, which goes on
// in the remote's session: the same Mcp-Session-Id, no second initialize.
func TestSurviveCarriesURLSession(t *testing.T) {
	proctest.CheckNoLeaks(t)
	r := startRemote(t)
	dir := killedWithAURLSession(t, r)
	p, res := nextDaemon(t, dir, true, remoteDef(r.url, false))
	if len(res.Adopted) != 1 || len(res.Replaced) != 0 {
		t.Fatalf("adopted %v, replaced %v; want one adopted", res.Adopted, res.Replaced)
	}
	callAfter(t, p)
	ids, inits := r.sessions()
	if len(ids) != 1 || inits != 1 {
		t.Fatalf("the remote saw sessions %q and %d initialize requests; want one of each: %+v", ids, inits, r.requests())
	}
	if calls := r.calls(); len(calls) != 4 || slices.ContainsFunc(calls, func(s string) bool { return s != ids[0] }) {
		t.Errorf("tools/call sessions %q; want 4 (counter twice, sleep, counter) in %s", calls, ids[0])
	}
}

// TestSurviveReplacesAChangedURLServer: a killed daemon's url instance
// whose definition changed meanwhile is not adopted: the next call opens
// a new session.
func TestSurviveReplacesAChangedURLServer(t *testing.T) {
	proctest.CheckNoLeaks(t)
	r := startRemote(t)
	dir := killedWithAURLSession(t, r)
	p, res := nextDaemon(t, dir, true, remoteDef(r.url, true))
	if len(res.Adopted) != 0 || len(res.Replaced) != 1 {
		t.Fatalf("adopted %v, replaced %v; want one replaced", res.Adopted, res.Replaced)
	}
	callAfter(t, p)
	ids, inits := r.sessions()
	if len(ids) != 2 || inits != 2 {
		t.Fatalf("the remote saw sessions %q and %d initialize requests; want two of each: %+v", ids, inits, r.requests())
	}
	if calls := r.calls(); calls[len(calls)-1] != ids[1] {
		t.Errorf("tools/call sessions %q; want the last in the new session %s", calls, ids[1])
	}
}
