package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpxclient "mcpx.dev/mcpx/api/client"
	"mcpx.dev/mcpx/api/wire"
	"mcpx.dev/mcpx/internal/proctest"
	"mcpx.dev/mcpx/internal/testenv"
)

// artifactsDir is where a test keeps files worth looking at afterwards:
// $MCPX_ARTIFACTS/<test> when set (CI keeps it), else a temporary directory.
func artifactsDir(t *testing.T) string {
	t.Helper()
	root := os.Getenv("MCPX_ARTIFACTS")
	if root == "" {
		return t.TempDir()
	}
	dir := filepath.Join(root, t.Name())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDashboardInChromium drives the dashboard and /docs in headless
// Chromium (Debian's, through playwright-core): an anonymous load is
// refused, signing in with the daemon's token works, an instance started
// by a call made elsewhere (the Go client, over the unix socket) appears
// with its scope key and session, a crash shows up with its stderr tail, a
// "try it" call shows its progress and result, the page fits a phone's
// width, and /docs renders every operation of the broker's document. The
// script (testdata/browser/dashboard.cjs) saves screenshots in
// artifactsDir.
func TestDashboardInChromium(t *testing.T) {
	browserPath := testenv.Chromium(t)
	node := testenv.Node(t)
	pw := filepath.Dir(testenv.NPMPackageBin(t, "playwright-core"))
	proctest.CheckNoLeaks(t)
	d := startDaemon(t, daemonOptions{stateDir: t.TempDir(), // the call log: rates and latency
		cfg: demoConfig(t, map[string]string{"demo": "", "notes": `{"scope": "session"}`, "flaky": ""})})
	shots := artifactsDir(t)

	// The operations /docs must show: every one of the broker's own
	// document, as served.
	r := d.unix.do(t, "GET", "/openapi.json", "")
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	r.decode(t, &doc)
	var operations []string
	for p, item := range doc.Paths {
		for method := range item {
			operations = append(operations, strings.ToUpper(method)+" "+p)
		}
	}
	if len(operations) < len(wire.Routes()) {
		t.Fatalf("the broker's document has %d operations, the route table %d", len(operations), len(wire.Routes()))
	}
	want, _ := json.Marshal(operations)

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "browser", "dashboard.cjs"))
	cmd.Env = append(os.Environ(), "PLAYWRIGHT_CORE="+pw, "CHROMIUM="+browserPath, "MCPX_URL="+d.tcp.base,
		"MCPX_TOKEN="+testToken, "SHOTS="+shots, "MCPX_OPERATIONS="+string(want))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	passed := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		switch line := sc.Text(); line {
		case "READY-FOR-CALL":
			callElsewhere(t, d.sock)
			fmt.Fprintln(stdin, "CALLED")
		case "PASS":
			passed = true
		default:
			t.Logf("script: %s", line)
		}
	}
	io.Copy(io.Discard, stdout) //nolint:errcheck // drain what is left for Wait
	err = cmd.Wait()
	if err != nil || !passed {
		t.Fatalf("the browser script failed (%v):\n%s", err, stderr.String())
	}

	for name, width := range map[string]int{"dashboard-desktop.png": 1280, "dashboard-phone.png": 390 * 2, "docs-desktop.png": 1280} {
		f, err := os.Open(filepath.Join(shots, name))
		if err != nil {
			t.Errorf("screenshot: %v", err)
			continue
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil || cfg.Width != width {
			t.Errorf("%s: %v, %d px wide, want a PNG %d px wide", name, err, cfg.Width, width)
		}
	}
	t.Logf("screenshots in %s", shots)
}

// callElsewhere starts instances as another client would: a session-scoped
// call with the Go client over the unix socket, and a call that crashes
// the flaky server after writing to its stderr.
func callElsewhere(t *testing.T, sock string) {
	t.Helper()
	c := mcpxclient.New(sock, mcpxclient.Options{})
	if _, err := c.CallTool(t.Context(), mcpxclient.Caller{Session: "agent-1"}, "notes", "echo", json.RawMessage(`{"message":"hi"}`), nil); err != nil {
		t.Fatalf("calling notes.echo with the Go client: %v", err)
	}
	if _, err := c.CallTool(t.Context(), mcpxclient.Caller{}, "flaky", "crash", json.RawMessage(`{"stderr":"flaky went down\n"}`), nil); err == nil {
		t.Fatal("flaky.crash succeeded; it should fail")
	}
}
