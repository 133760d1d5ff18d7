package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tailscale.com/envknob"
	"tailscale.com/net/netns"
	"tailscale.com/tstest/integration/testcontrol"
	"tailscale.com/types/logger"

	"mcpx.dev/mcpx/api/wire"
	"mcpx.dev/mcpx/internal/testenv"
)

// TestDoctorTailnetNeedsLogin: `mcpx doctor --tailnet` against a control
// server (tailscale's in-process testcontrol) that requires a login, with
// no auth key: the node needs login, doctor says so with the login URL and
// the fix, and exits 1.
func TestDoctorTailnetNeedsLogin(t *testing.T) {
	envknob.SetenvForTest(t, "TS_DISABLE_PORTMAPPER", "1")
	netns.SetEnabled(false)
	t.Cleanup(func() { netns.SetEnabled(true) })
	control := &testcontrol.Server{RequireAuth: true, Logf: logger.Discard}
	control.HTTPTestServer = httptest.NewUnstartedServer(control)
	control.HTTPTestServer.Start()
	t.Cleanup(control.HTTPTestServer.Close)

	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(`{"servers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr testenv.SyncBuffer
	code := run(t.Context(), []string{"doctor", "--config", cfg, "--state-dir", filepath.Join(dir, "state"),
		"--socket", filepath.Join(dir, "mcpx.sock"), "--tailnet", "--tailnet-hostname", "lonely",
		"--tailnet-control-url", control.HTTPTestServer.URL, "--tailnet-up-timeout", "5s"},
		strings.NewReader(""), &stdout, &stderr)
	out := stdout.String()
	if code != exitToolError {
		t.Errorf("doctor exited %d, want %d:\n%s%s", code, exitToolError, out, stderr.String())
	}
	for _, want := range []string{
		`FAIL tailnet lonely: tailnet node "lonely" needs login: open ` + control.HTTPTestServer.URL,
		"fix: log the node in: open the URL above, or give it an auth key (--tailnet-authkey-file or $TS_AUTHKEY)",
		"1 problem found",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor's output lacks %q:\n%s", want, out)
		}
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
		ok, subject, detail, fix := tailnetFinding(tc.st, tc.want, "mcpx")
		if ok != tc.ok || subject != tc.subject || (tc.detail == "") != (detail == "") || !strings.Contains(detail, tc.detail) || !strings.Contains(fix, tc.fix) {
			t.Errorf("%+v (want %v): %v %q %q %q, want %v %q ~%q ~%q", tc.st, tc.want, ok, subject, detail, fix, tc.ok, tc.subject, tc.detail, tc.fix)
		}
	}
}
