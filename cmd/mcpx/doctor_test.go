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

	"mcpx.dev/mcpx/internal/testing/testenv"
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
