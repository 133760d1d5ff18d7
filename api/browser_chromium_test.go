package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	mcpxclient "mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/client/fleet"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
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
// with its scope key and session, a crash is listed once with its stderr
// tail, the traffic charts draw the calls, each action (approve a pinned
// tool, stop an instance, restart a server, reload the config, revoke a
// token) asks first and works, and is refused without the CSRF secret and
// to a token without admin, a revoked session says why at the sign-in
// page, the call stream shows calls made elsewhere and pauses, the fleet
// page lists this broker and another on the tailnet with links to their
// dashboards, a "try it" result renders its text, image and embedded
// resource with the raw JSON behind a click, the page fits a phone's
// width, /docs renders every operation of the broker's document, and no
// page makes a request anywhere but the broker's own origin. The script
// (testdata/browser/dashboard.cjs) saves screenshots in artifactsDir.
func TestDashboardInChromium(t *testing.T) {
	browserPath := testenv.Chromium(t)
	node := testenv.Node(t)
	pw := filepath.Dir(testenv.NPMPackageBin(t, "playwright-core"))
	everything := testenv.NPMPackageBin(t, "@modelcontextprotocol/server-everything")
	proctest.CheckNoLeaks(t)
	cfg := apitest.DemoConfig(t, map[string]string{"demo": "", "notes": `{"scope": "session"}`,
		"flaky":  `{"scope": "global"}`, // the crashed instance stays listed, with its last error
		"pinned": `{"scope": "global", "pinTools": true, "env": {"MCPX_DEMO_DESCRIBE": "Returns the message."}}`})
	evDoc, _ := json.Marshal(map[string]any{"servers": map[string]any{"everything": map[string]any{
		"command": node, "args": []string{everything}, "scope": "global",
		"env": map[string]string{proctest.MarkerEnv: proctest.Marker(t)}}}})
	more, err := config.Parse(evDoc, "everything.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Servers["everything"] = more.Servers["everything"]
	is, err := auth.Open(auth.Options{Dir: t.TempDir(), Hostname: "box"})
	if err != nil {
		t.Fatal(err)
	}
	var reloads atomic.Int32
	d := apitest.Start(t, apitest.Options{StateDir: t.TempDir(), // the call log: rates and latency
		Config: cfg, Tokens: is, API: func(o *api.Options) {
			o.Tailnet, o.Node = fakeTailnet(t), &wire.NodeInfo{Name: "alpha", DNSName: "alpha.tail.ts.net"}
			o.Daemon = &api.Daemon{Reload: func(context.Context) (wire.Reloaded, error) {
				reloads.Add(1)
				return wire.Reloaded{Config: "/etc/mcpx.json", Servers: len(cfg.Servers)}, nil
			}}
		}})
	viewer := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "viewer", Rule: rights.Rule{Servers: []string{"demo"}}, TTL: "1h"})
	doomed := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "doomed", TTL: "1h"})
	worktree, err := filepath.EvalSymlinks(t.TempDir()) // a repository's worktree
	if err != nil {
		t.Fatal(err)
	}
	testenv.RunGit(t, worktree, "init", "-q")
	shots := artifactsDir(t)

	// The operations /docs must show: every one of the broker's own
	// document, as served.
	r := d.Unix.Do(t, "GET", "/openapi.json", "")
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	r.Decode(t, &doc)
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
	cmd.Env = append(os.Environ(), "PLAYWRIGHT_CORE="+pw, "CHROMIUM="+browserPath, "MCPX_URL="+d.TCP.Base,
		"MCPX_TOKEN="+apitest.Token, "SHOTS="+shots, "MCPX_OPERATIONS="+string(want),
		"MCPX_VIEWER_TOKEN="+viewer.Token, "MCPX_DOOMED_TOKEN="+doomed.Token, "MCPX_WORKTREE="+worktree, proctest.Env(t))
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
			callElsewhere(t, d.Sock)
			if r := d.Unix.Do(t, "POST", "/v1/servers/pinned/tools/redescribe", `{"description":"Returns the message, changed."}`); r.StatusCode != 200 {
				t.Errorf("redescribe: %d %s", r.StatusCode, r.Bytes)
			}
			fmt.Fprintln(stdin, "CALLED")
		case "READY-FOR-STREAM", "READY-FOR-PAUSED":
			n := map[string]int{"READY-FOR-STREAM": 3, "READY-FOR-PAUSED": 2}[line]
			for i := range n {
				tool := map[bool]string{true: "fail", false: "echo"}[i == 0]
				if r := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/"+tool, `{"message":"streamed"}`); r.StatusCode != 200 {
					t.Errorf("%s: %d %s", tool, r.StatusCode, r.Bytes)
				}
			}
			fmt.Fprintln(stdin, strings.Replace(line, "READY-FOR-", "CALLED-", 1))
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

	if reloads.Load() != 1 {
		t.Errorf("the dashboard's reload reached the daemon %d times, want 1", reloads.Load())
	}
	for name, width := range map[string]int{"dashboard-desktop.png": 1280, "dashboard-phone.png": 390 * 2, "docs-desktop.png": 1280,
		"action-confirm.png": 1280, "calls.png": 1280, "fleet.png": 1280, "tryit-result.png": 0, "login-revoked.png": 1280} { // 0: a card's own width
		f, err := os.Open(filepath.Join(shots, name))
		if err != nil {
			t.Errorf("screenshot: %v", err)
			continue
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil || cfg.Width != width && (width != 0 || cfg.Width == 0) {
			t.Errorf("%s: %v, %d px wide, want a PNG %d px wide", name, err, cfg.Width, width)
		}
	}
	t.Logf("screenshots in %s", shots)
}

// fakeTailnet is a tailnet node with one peer, the broker beta, served on
// loopback and reached through the node's dialer.
func fakeTailnet(t *testing.T) *api.Tailnet {
	beta := strings.TrimPrefix(serveTailnetAPI(t, "beta-tools", nil, nil), "http://")
	return &api.Tailnet{
		Status: func(context.Context) wire.TailnetStatus { return wire.TailnetStatus{State: wire.TailnetRunning} },
		Peers: func(context.Context) ([]fleet.Peer, error) {
			return []fleet.Peer{{Name: "beta", DNSName: "beta.tail.ts.net", Tags: []string{"tag:mcpx"}, Online: true}}, nil
		},
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, beta)
		},
	}
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
