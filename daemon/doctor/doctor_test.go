package doctor_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/daemon"
	"mcpx.dev/mcpx/daemon/doctor"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/oauthtest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/pool/proc/sandbox"
	"mcpx.dev/mcpx/wire"
)

func TestMain(m *testing.M) {
	sandbox.MaybeExec() // a confined child's helper: confine, exec, never return
	demo.MaybeServe()   // a server of a throwaway broker: serve and exit
	os.Exit(m.Run())
}

// only is the one finding d has, failing the test otherwise.
func only(t *testing.T, d *doctor.Doctor) doctor.Finding {
	t.Helper()
	if len(d.Findings) != 1 {
		t.Fatalf("findings %+v, want one", d.Findings)
	}
	f := d.Findings[0]
	d.Findings = nil
	return f
}

// TestStateAndSocket: a state directory not yet made is fine, one open to
// others is a problem with its chmod; no socket is no daemon, a socket
// nobody listens on is stale, a file in its place is a problem.
func TestStateAndSocket(t *testing.T) {
	dir := t.TempDir()
	d := &doctor.Doctor{}
	state := filepath.Join(dir, "state")
	d.State(state)
	if f := only(t, d); !f.OK || !strings.Contains(f.Detail, "not created yet") {
		t.Errorf("no state directory: %+v", f)
	}
	os.Mkdir(state, 0o700)
	d.State(state)
	if f := only(t, d); !f.OK || f.Detail != "yours, private, writable" {
		t.Errorf("a private state directory: %+v", f)
	}
	os.Chmod(state, 0o777)
	d.State(state)
	if f := only(t, d); f.OK || !strings.Contains(f.Detail, "mode 0777") || f.Fix != "chmod 700 "+state {
		t.Errorf("a state directory open to others: %+v", f)
	}
	sock := filepath.Join(dir, "mcpx.sock")
	if bc := d.Socket(t.Context(), sock); bc != nil {
		t.Error("no socket: a client")
	}
	if f := only(t, d); !f.OK || !strings.Contains(f.Detail, "no daemon running") {
		t.Errorf("no socket: %+v", f)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // the socket file stays, and nobody listens: a killed daemon's
	d.Socket(t.Context(), sock)
	if f := only(t, d); f.OK || !strings.Contains(f.Detail, "stale") || f.Fix != "remove it: rm "+sock+"; the next client starts a daemon, or `mcpx service install` runs one" {
		t.Errorf("a stale socket: %+v", f)
	}
	os.Remove(sock)
	os.WriteFile(sock, nil, 0o600)
	d.Socket(t.Context(), sock)
	if f := only(t, d); f.OK || !strings.Contains(f.Detail, "not a socket") {
		t.Errorf("a file in the socket's place: %+v", f)
	}
}

// TestServers: with no daemon, every server starts in a throwaway broker
// of the doctor's own; one that cannot start is a problem naming it, and
// the broker's children are gone when Servers returns.
func TestServers(t *testing.T) {
	proctest.CheckNoLeaks(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(map[string]any{"servers": map[string]any{
		"demo":   map[string]any{"command": exe, "env": map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(t)}},
		"broken": map[string]any{"command": "/nonexistent/server"},
	}})
	cfg, err := config.Parse(doc, "test.json")
	if err != nil {
		t.Fatal(err)
	}
	d := &doctor.Doctor{Version: "test"}
	d.Servers(t.Context(), cfg, daemon.Source{Path: "test.json"}, t.TempDir(), nil, 30*time.Second)
	if len(d.Findings) != 2 {
		t.Fatalf("findings %+v, want two", d.Findings)
	}
	if f := d.Findings[0]; f.OK || f.Subject != "broken" || !strings.Contains(f.Detail, "does not start or list its tools") || !strings.Contains(f.Fix, "`mcpx call broken.<tool>`") {
		t.Errorf("the broken server: %+v", f)
	}
	if f := d.Findings[1]; !f.OK || f.Subject != "demo" || !strings.HasPrefix(f.Detail, "started, ") {
		t.Errorf("the demo server: %+v", f)
	}
	if !d.Failed() {
		t.Error("Failed is false with a problem found")
	}
}

// TestTailnetFinding: doctor's word on each state a running daemon's node
// can report (GET /v1/tailnet), with the fix for each problem.
func TestTailnetFinding(t *testing.T) {
	node := &wire.NodeInfo{Name: "box", DNSName: "box.tail.ts.net"}
	for _, tc := range []struct {
		st      wire.TailnetStatus
		want    bool // --tailnet
		ok      bool
		subject string
		detail  string // a part of it; "" = no finding
		fix     string // a part of it
	}{
		{wire.TailnetStatus{State: wire.TailnetOff}, false, true, "mcpx", "", ""},
		{wire.TailnetStatus{State: wire.TailnetOff}, true, false, "mcpx", "not on a tailnet", "mcpx serve --tailnet"},
		{wire.TailnetStatus{State: wire.TailnetRunning, Node: node}, false, true, "box.tail.ts.net", "up as box.tail.ts.net", ""},
		{wire.TailnetStatus{State: wire.TailnetNeedsLogin, Node: node, AuthURL: "https://login.example/a/1", Health: []string{"key expired"}}, true, false,
			"box.tail.ts.net", "needs login (key expired)", "open https://login.example/a/1"},
		{wire.TailnetStatus{State: wire.TailnetNeedsLogin}, true, false, "mcpx", "needs login", "auth key"},
		{wire.TailnetStatus{State: wire.TailnetNeedsMachineAuth, Node: node}, true, false, "box.tail.ts.net", "approve", "admin console"},
		{wire.TailnetStatus{State: wire.TailnetStarting}, true, false, "mcpx", "still connecting", "control server"},
		{wire.TailnetStatus{State: wire.TailnetStopped}, true, false, "mcpx", "stopped", "log says why"},
	} {
		ok, subject, detail, fix := doctor.TailnetFinding(tc.st, tc.want, "mcpx")
		if ok != tc.ok || subject != tc.subject || (tc.detail == "") != (detail == "") || !strings.Contains(detail, tc.detail) || !strings.Contains(fix, tc.fix) {
			t.Errorf("%+v (want %v): %v %q %q %q, want %v %q ~%q ~%q", tc.st, tc.want, ok, subject, detail, fix, tc.ok, tc.subject, tc.detail, tc.fix)
		}
	}
}

// TestSandboxFindings: what the kernel enforces is a finding per feature;
// one a confined child needs that it lacks is a problem with its fix.
func TestSandboxFindings(t *testing.T) {
	full := sandbox.Kernel{OS: "linux", Landlock: 7, Namespaces: true, Memory: sandbox.CgroupDir{Dir: "/sys/fs/cgroup/memory/x", Version: 1},
		Pids: sandbox.CgroupDir{Dir: "/sys/fs/cgroup/pids/x", Version: 1}}
	var d doctor.Doctor
	d.Sandbox(&full)
	if d.Failed() || len(d.Findings) < 10 {
		t.Errorf("a kernel that enforces everything: %+v", d.Findings)
	}
	bare := sandbox.Kernel{OS: "linux", LandlockWhy: "the kernel was built without Landlock (CONFIG_SECURITY_LANDLOCK)", NamespacesWhy: "user.max_user_namespaces is 0", Root: true}
	d = doctor.Doctor{}
	d.Sandbox(&bare)
	problems := map[string]doctor.Finding{}
	for _, f := range d.Findings {
		if !f.OK {
			problems[f.Subject] = f
		}
	}
	for _, name := range []string{sandbox.FeatureFilesystem, sandbox.FeatureNetwork, sandbox.FeatureUserNamespace, sandbox.FeatureProcesses} {
		f, ok := problems[name]
		if !ok || !strings.Contains(f.Fix, "docs/sandbox.md") {
			t.Errorf("%s on a kernel without it: %+v, want a problem with its fix", name, f)
		}
	}
	if f := problems[sandbox.FeatureFilesystem]; !strings.Contains(f.Detail, "CONFIG_SECURITY_LANDLOCK") {
		t.Errorf("the filesystem problem does not say why: %q", f.Detail)
	}
}

// TestSignIns: each url server's sign-in metadata chain is walked; a good
// one is OK naming its links, a broken one a problem naming the step that
// fails, a server that needs no sign-in OK saying so, and a server with an
// Authorization header of its own is not checked.
func TestSignIns(t *testing.T) {
	good := oauthtest.New(t, nil)
	bad := oauthtest.New(t, nil)
	bad.Resource = "https://elsewhere.example/mcp" // its resource metadata names another server
	open := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{}`)) }))
	defer open.Close()
	cfg, err := config.Parse([]byte(`{"servers": {"good": {"url": "`+good.MCPURL()+`"}, "bad": {"url": "`+bad.MCPURL()+`"},
		"open": {"url": "`+open.URL+`"}, "keyed": {"url": "`+bad.MCPURL()+`", "headers": {"Authorization": "Bearer x"}}}}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	d := &doctor.Doctor{}
	d.SignIns(t.Context(), cfg, 10*time.Second)
	got := map[string]doctor.Finding{}
	for _, f := range d.Findings {
		got[f.Subject] = f
	}
	if f := got["good"]; !f.OK || !strings.Contains(f.Detail, "issuer "+good.AS.URL) || !strings.Contains(f.Detail, "dynamic registration at "+good.AS.URL+"/register") {
		t.Errorf("good: %+v", f)
	}
	if f := got["bad"]; f.OK || !strings.Contains(f.Detail, "the resource metadata step fails") || f.Fix == "" {
		t.Errorf("bad: %+v, want a problem naming the resource metadata step", f)
	}
	if f := got["open"]; !f.OK || !strings.Contains(f.Detail, "no sign-in needed") {
		t.Errorf("open: %+v", f)
	}
	if _, ok := got["keyed"]; ok || len(d.Findings) != 3 {
		t.Errorf("findings %+v, want three, none for the server with its own Authorization header", d.Findings)
	}
}
