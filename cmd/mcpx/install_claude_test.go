package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// The real harness: Claude Code (npm @anthropic-ai/claude-code, pinned in
// testdata/npm) configured by `mcpx install claude` alone, asked with
// `claude mcp list`, which connects to every server (initialize or
// server/discover, then tools/list) without the model's API.

// claudeHome sets up a home for Claude Code and mcpx install: HOME, the XDG
// directories and the state directory below a short temporary directory
// (a socket path must stay under ~104 bytes), for this test.
func claudeHome(t *testing.T) (home, state string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "mcpx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	home = filepath.Join(dir, "home")
	os.MkdirAll(home, 0o700)
	t.Setenv("HOME", home)
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(dir, "run"))
	return home, filepath.Join(dir, "state", "mcpx")
}

// installClaude runs `mcpx install claude args...` in this process.
func installClaude(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(t.Context(), append([]string{"install", "claude"}, args...), strings.NewReader(""), &out, &errOut); code != exitOK {
		t.Fatalf("mcpx install claude %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
	}
	return out.String()
}

// claudeMCPList runs `claude mcp list` in home with env added and returns
// the line it prints for mcpx. It exits 0 whatever the servers' health:
// the line says "✔ Connected" or "✘ Failed to connect — why".
func claudeMCPList(t *testing.T, home string, env ...string) string {
	t.Helper()
	claude := testenv.NPMPackageBin(t, "@anthropic-ai/claude-code")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "mcp", "list")
	cmd.Dir = home
	cmd.Env = append(os.Environ(), append([]string{"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", proctest.Env(t)}, env...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("claude mcp list: %v\n%s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "mcpx: ") {
			return strings.TrimSpace(line)
		}
	}
	t.Fatalf("claude mcp list names no mcpx:\n%s", out)
	return ""
}

func wantConnected(t *testing.T, line string) {
	t.Helper()
	if !strings.HasSuffix(line, "✔ Connected") {
		t.Fatalf("claude mcp list: %q, want mcpx connected", line)
	}
}

// TestInstallClaudeStdioEntry: the stdio entry `mcpx install claude`
// writes, with a go-sdk stdio server (this test binary as the demo server)
// in mcpx's place, is one Claude Code starts and connects to.
func TestInstallClaudeStdioEntry(t *testing.T) {
	proctest.CheckNoLeaks(t)
	home, state := claudeHome(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	installClaude(t, "--binary", exe, "--state-dir", state)
	line := claudeMCPList(t, home, demo.EnvServer+"=1")
	if !strings.HasPrefix(line, "mcpx: "+exe+" mcp ") {
		t.Errorf("claude mcp list: %q, want the command %s mcp", line, exe)
	}
	wantConnected(t, line)
}

// TestInstallClaudeHTTPEntry: the HTTP entry of `mcpx install claude --http
// --broker URL --token-file F`, in front of a go-sdk Streamable HTTP server
// that wants the token, is one Claude Code connects to, token and all; a
// wrong token is refused, so the check is real.
func TestInstallClaudeHTTPEntry(t *testing.T) {
	proctest.CheckNoLeaks(t)
	home, state := claudeHome(t)
	const token = "tok-8f2c1d"
	var authorized atomic.Int32
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo.NewServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/mcp" {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "wrong token", http.StatusForbidden)
			return
		}
		authorized.Add(1)
		mcpHandler.ServeHTTP(w, r)
	}))
	defer srv.Close()
	tokenFile := filepath.Join(home, "token")
	testenv.WriteFile(t, tokenFile, token+"\n")

	out := installClaude(t, "--http", "--broker", srv.URL, "--token-file", tokenFile, "--binary", "/opt/mcpx", "--state-dir", state)
	if !strings.Contains(out, "file mode 0600") {
		t.Errorf("install does not say the file is 0600:\n%s", out)
	}
	if st, err := os.Stat(filepath.Join(home, ".claude.json")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("~/.claude.json: %v %v, want mode 0600", st.Mode(), err)
	}
	line := claudeMCPList(t, home)
	if !strings.HasPrefix(line, "mcpx: "+srv.URL+"/mcp (HTTP)") {
		t.Errorf("claude mcp list: %q, want the URL %s/mcp", line, srv.URL)
	}
	wantConnected(t, line)
	if authorized.Load() == 0 {
		t.Fatal("claude mcp list says connected, but no request with the token reached the server")
	}

	testenv.WriteFile(t, tokenFile, "not-the-token\n")
	installClaude(t, "--http", "--broker", srv.URL, "--token-file", tokenFile, "--binary", "/opt/mcpx", "--state-dir", state)
	if line := claudeMCPList(t, home); strings.HasSuffix(line, "✔ Connected") {
		t.Fatalf("claude mcp list with a wrong token: %q", line)
	}
}

// TestInstallClaudeDaemon is the whole path: a real daemon, `mcpx install
// claude` writing the stdio bridge `mcpx mcp`, then --http writing the
// daemon's own loopback /mcp URL and an owner token of Claude Code's;
// Claude Code connects to both, and to the --http entry still after the
// daemon restarts (on the same port). Revoked, the token is refused with
// a message naming the fix, and Claude Code, given a new one by a second
// install, connects again: no OAuth state is left behind (issue 34).
func TestInstallClaudeDaemon(t *testing.T) {
	proctest.CheckNoLeaks(t)
	home, state := claudeHome(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(filepath.Dir(home), "bin", "mcpx") // this test binary, run as mcpx (TestMain)
	os.MkdirAll(filepath.Dir(bin), 0o755)
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	sock, err := defaultSocket(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	// The demo child is the test binary run as mcpx (the symlink), so that
	// TestMain serves it: the built-in config's <self> is the test binary,
	// which would run the tests instead.
	cfgFile := filepath.Join(filepath.Dir(home), "config.json")
	testenv.WriteFile(t, cfgFile, `{"servers": {"demo": {"command": "`+bin+`", "args": ["demo-server"], "env": {"`+proctest.MarkerEnv+`": "`+proctest.Marker(t)+`"}}}}`)
	var logs testenv.SyncBuffer
	serve := func(listen string) (stop func()) {
		ctx, cancel := context.WithCancel(t.Context())
		served := make(chan int, 1)
		go func() {
			served <- run(ctx, []string{"serve", "--socket", sock, "--state-dir", state, "--listen", listen, "--config", cfgFile},
				strings.NewReader(""), &testenv.SyncBuffer{}, &logs)
		}()
		testenv.WaitFor(t, "the daemon to answer and publish its record", func() bool {
			_, err := client.ReadRecord(state)
			return err == nil && client.Answers(sock)
		})
		return sync.OnceFunc(func() {
			cancel()
			if code := <-served; code != exitOK {
				t.Errorf("serve exited %d:\n%s", code, logs.String())
			}
		})
	}
	stopDaemon := serve("127.0.0.1:0")
	defer func() { stopDaemon() }()

	// `mcpx mcp`, started by Claude Code, reaches the daemon on its default
	// socket (the XDG variables claudeHome set are in Claude Code's
	// environment, so in its children's).
	installClaude(t, "--binary", bin, "--state-dir", state)
	line := claudeMCPList(t, home, "MCPX_NO_AUTOSTART=1")
	if !strings.HasPrefix(line, "mcpx: "+bin+" mcp ") {
		t.Errorf("claude mcp list: %q, want the command %s mcp", line, bin)
	}
	wantConnected(t, line)

	out := installClaude(t, "--http", "--binary", bin, "--state-dir", state)
	rec, err := client.ReadRecord(state)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(home, ".claude.json")
	b, err := os.ReadFile(cfg)
	if st, _ := os.Stat(cfg); err != nil || st.Mode().Perm() != 0o600 || strings.Contains(string(b), rec.Token) || !strings.Contains(string(b), "Bearer mcpx_") {
		t.Fatalf("~/.claude.json (%v): want mode 0600 and an owner token, not the daemon's:\n%s", err, b)
	}
	if !strings.Contains(out, "file mode 0600") || !strings.Contains(out, "survives the daemon's restarts") {
		t.Errorf("install --http says:\n%s", out)
	}
	line = claudeMCPList(t, home)
	if !strings.HasPrefix(line, "mcpx: "+rec.URL+"/mcp (HTTP)") {
		t.Errorf("claude mcp list: %q, want the daemon's %s/mcp", line, rec.URL)
	}
	wantConnected(t, line)

	// A restart: a new daemon token, the same port, the same entry.
	stopDaemon()
	stopDaemon = serve(strings.TrimPrefix(rec.URL, "http://"))
	if again, err := client.ReadRecord(state); err != nil || again.Token == rec.Token || again.URL != rec.URL {
		t.Fatalf("the restarted daemon's record: %+v %v; want a new token on %s", again, err, rec.URL)
	}
	wantConnected(t, claudeMCPList(t, home))
	tokens := mcpxOut(t, "token", "ls", "--state-dir", state)
	if !strings.Contains(tokens, "owner tokens") || !regexp.MustCompile(`(?m)^claude\s+\S+\s+20`).MatchString(tokens) {
		t.Errorf("mcpx token ls: want the owner token claude, used:\n%s", tokens)
	}

	// Revoked: refused at once, saying how to fix it; installed again, it
	// connects (Claude Code kept no OAuth state).
	mcpxOut(t, "token", "revoke", "claude", "--state-dir", state)
	if line := claudeMCPList(t, home); !strings.Contains(line, "401") || !strings.Contains(line, "--http") {
		t.Errorf("claude mcp list with a revoked token: %q, want a 401 saying how to fix it", line)
	}
	installClaude(t, "--http", "--binary", bin, "--state-dir", state)
	wantConnected(t, claudeMCPList(t, home))
}

// mcpxOut runs `mcpx args...` in this process, which must succeed, and
// returns its output.
func mcpxOut(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(t.Context(), args, strings.NewReader(""), &out, &errOut); code != exitOK {
		t.Fatalf("mcpx %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
	}
	return out.String() + errOut.String()
}
