package api_test

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// clientDaemon is a daemon with a global demo server and a worktree-scoped
// one (wt), and a state directory holding its daemon record, as a generated
// client finds a local daemon.
func clientDaemon(t *testing.T) (d *apitest.Daemon, stateDir string) {
	d = apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{
		"demo": "",
		"wt":   `{"scope": "worktree"}`,
	})})
	home := t.TempDir()
	stateDir = filepath.Join(home, "state")
	rec, _ := json.Marshal(wire.DaemonRecord{URL: "http://" + d.TCPAddr, Token: apitest.Token})
	if err := os.MkdirAll(filepath.Join(stateDir, "mcpx"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stateDir, "mcpx", wire.RecordFile), rec, 0o600); err != nil {
		t.Fatal(err)
	}
	return d, stateDir
}

func TestTypeScriptClientRoute(t *testing.T) {
	d, _ := clientDaemon(t)
	cwd := t.TempDir()
	res := d.TCP.Do(t, "GET", "/v1/clients/typescript?servers=demo", "", wire.HeaderCwd, cwd)
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), wire.MediaTypeScript) {
		t.Fatalf("status %d, Content-Type %q: %s", res.StatusCode, res.Header.Get("Content-Type"), res.Bytes)
	}
	// The same tools give the same module: its ETag answers 304, no body;
	// another module (all servers) has another tag.
	etag := res.Header.Get("ETag")
	if again := d.TCP.Do(t, "GET", "/v1/clients/typescript?servers=demo", "", wire.HeaderCwd, cwd, "If-None-Match", etag); again.StatusCode != 304 || len(again.Bytes) != 0 || etag == "" {
		t.Errorf("If-None-Match %s: %d with %d bytes, want 304 and none", etag, again.StatusCode, len(again.Bytes))
	}
	if other := d.TCP.Do(t, "GET", "/v1/clients/typescript", "", wire.HeaderCwd, cwd, "If-None-Match", etag); other.StatusCode != 200 || other.Header.Get("ETag") == etag {
		t.Errorf("another module under the same tag: %d, ETag %s", other.StatusCode, other.Header.Get("ETag"))
	}
	src := string(res.Bytes)
	for _, want := range []string{"// Broker: mcpx test\n", "//   demo (16 tools, sha256:", "export const demo = {", "echo: (args: demo.EchoInput"} {
		if !strings.Contains(src, want) {
			t.Errorf("the module lacks %q", want)
		}
	}
	if strings.Contains(src, "export const wt") {
		t.Error("?servers=demo generated wt too")
	}
	all := d.Unix.Do(t, "GET", "/v1/clients/typescript", "", wire.HeaderCwd, t.TempDir())
	if !strings.Contains(string(all.Bytes), "export const wt = {") || !strings.Contains(string(all.Bytes), "export const demo = {") {
		t.Errorf("without ?servers the module lacks a server:\n%.2000s", all.Bytes)
	}
	if p := d.TCP.Do(t, "GET", "/v1/clients/typescript?servers=demo,nope", "").Problem(t); p.Kind() != wire.KindNotFound {
		t.Errorf("an unknown server: %+v, want not-found", p)
	}
}

// scriptRuntime runs a TypeScript script beside its client.ts: cmd
// prepares dir and returns the command line.
type scriptRuntime struct {
	name string
	cmd  func(t *testing.T, dir string) []string
}

// scriptRuntimes are node (after tsc, as Node 20 does not strip types),
// deno and bun.
func scriptRuntimes(t *testing.T) []scriptRuntime {
	node := testenv.Node(t)
	return []scriptRuntime{
		{"node", func(t *testing.T, dir string) []string {
			tsc := testenv.NPMPackageBin(t, "typescript")
			out := filepath.Join(dir, "js")
			cmd := exec.Command(node, tsc, "--target", "es2022", "--module", "esnext", "--moduleResolution", "bundler",
				"--rewriteRelativeImportExtensions", "--types", "", "--skipLibCheck", "--outDir", out,
				filepath.Join(dir, "client.ts"), filepath.Join(dir, "script.ts"))
			cmd.Env = append(os.Environ(), proctest.Env(t))
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("tsc: %v\n%s", err, b)
			}
			if err := os.WriteFile(filepath.Join(out, "package.json"), []byte(`{"type":"module"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			return []string{node, filepath.Join(out, "script.js")}
		}},
		{"deno", func(t *testing.T, dir string) []string {
			return []string{node, testenv.NPMPackageBin(t, "deno"), "run", "--allow-net", "--allow-env", "--allow-read",
				filepath.Join(dir, "script.ts")}
		}},
		{"bun", func(t *testing.T, dir string) []string {
			return []string{testenv.NPMPackageBinNamed(t, "bun", "bun"), "run", filepath.Join(dir, "script.ts")}
		}},
	}
}

// TestTypeScriptClientRuns generates the client from a live broker and runs
// testdata/client/script.ts with it, for real, on node (after tsc, as Node
// 20 does not strip types), deno and bun: typed calls, progress, problems as
// McpxErrors, a worktree-scoped server answering with the script's own
// worktree, and an aborted call whose child sees the cancellation.
func TestTypeScriptClientRuns(t *testing.T) {
	runtimes := scriptRuntimes(t)
	d, stateDir := clientDaemon(t)
	trees := testenv.Worktrees(t, filepath.Join(t.TempDir(), "repo"), map[string]string{"a.txt": "a"}, "linked")
	linked := trees[1]
	sub := filepath.Join(linked, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	// The client, generated for the script's cwd as `mcpx clientgen ts` would.
	res := d.TCP.Do(t, "GET", "/v1/clients/typescript", "", wire.HeaderCwd, sub)
	if res.StatusCode != 200 {
		t.Fatalf("GET /v1/clients/typescript: %d %s", res.StatusCode, res.Bytes)
	}
	for _, rt := range runtimes {
		t.Run(rt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "client.ts"), res.Bytes, 0o644); err != nil {
				t.Fatal(err)
			}
			script, err := os.ReadFile(filepath.Join("testdata", "client", "script.ts"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "script.ts"), script, 0o644); err != nil {
				t.Fatal(err)
			}
			argv := rt.cmd(t, dir)
			runScript(t, d, argv, sub, stateDir, linked)
		})
	}
}

func runScript(t *testing.T, d *apitest.Daemon, argv []string, cwd, stateDir, worktree string) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = cwd
	home := t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_STATE_HOME=" + stateDir,
		"DENO_DIR=" + filepath.Join(home, "deno"), "DENO_NO_UPDATE_CHECK=1", "NO_COLOR=1",
		"BUN_INSTALL_CACHE_DIR=" + filepath.Join(home, "bun"), "MCPX_SESSION_ID=script-session", proctest.Env(t)}
	var stderr testenv.SyncBuffer
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
	done := make(chan struct{})
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	lines := make(chan string, 8)
	go func() {
		defer close(done)
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		cmd.Wait()
	}()
	next := func(what string) string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the script ended before %s; stderr:\n%s", what, stderr.String())
			}
			return l
		case <-time.After(60 * time.Second):
			t.Fatalf("no %s from the script in 60s; stderr:\n%s", what, stderr.String())
		}
		return ""
	}

	type outcome struct {
		Ok      json.RawMessage `json:"ok"`
		Kind    string          `json:"kind"`
		Status  int             `json:"status"`
		Server  string          `json:"server"`
		Tool    string          `json:"tool"`
		Message string          `json:"message"`
		Other   string          `json:"other"`
	}
	var got struct {
		Echo           string    `json:"echo"`
		Sum            float64   `json:"sum"`
		ProgressResult string    `json:"progressResult"`
		Progress       []float64 `json:"progress"`
		Worktree       string    `json:"worktree"`
		Ask            string    `json:"ask"`
		Asked          []string  `json:"asked"`
		UnknownServer  outcome   `json:"unknownServer"`
		UnknownTool    outcome   `json:"unknownTool"`
		BadArguments   outcome   `json:"badArguments"`
		SchemaError    bool      `json:"schemaViolation"`
		BadToken       outcome   `json:"badToken"`
		Timeout        outcome   `json:"timeout"`
	}
	line := next("the results")
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("the script printed %q: %v; stderr:\n%s", line, err, stderr.String())
	}
	if got.Echo != "hi" || got.Sum != 5 {
		t.Errorf("echo %q, sum %v; want hi, 5", got.Echo, got.Sum)
	}
	if got.ProgressResult != "done 3" || len(got.Progress) != 3 || got.Progress[2] != 3 {
		t.Errorf("progress: result %q, notes %v; want done 3 after 1, 2, 3", got.ProgressResult, got.Progress)
	}
	if got.Worktree != worktree {
		t.Errorf("wt.cwd() = %q, want the script's worktree %s", got.Worktree, worktree)
	}
	if !strings.HasPrefix(got.Ask, "accept ") || !strings.Contains(got.Ask, `"name":"Ada"`) || len(got.Asked) != 1 || got.Asked[0] != "elicitation:who?" {
		t.Errorf("demo.ask with onInput = %q after questions %q; want the accepted answer after one elicitation", got.Ask, got.Asked)
	}
	checks := []struct {
		name         string
		o            outcome
		kind         string
		status       int
		server, tool string
		says         string
	}{
		{"unknown server", got.UnknownServer, wire.KindNotFound, 404, "nope", "echo", "nope"},
		{"unknown tool", got.UnknownTool, wire.KindNotFound, 404, "demo", "nope", `no tool "nope"`},
		{"bad arguments", got.BadArguments, wire.KindBadRequest, 400, "demo", "strict", "n must be"},
		{"bad token", got.BadToken, wire.KindUnauthorized, 401, "demo", "echo", ""},
		{"timeout", got.Timeout, wire.KindTimeout, 504, "demo", "sleep", "100 ms"},
	}
	for _, c := range checks {
		if c.o.Kind != c.kind || c.o.Status != c.status || c.o.Server != c.server || c.o.Tool != c.tool || !strings.Contains(c.o.Message, c.says) {
			t.Errorf("%s: got %+v, want an McpxError of kind %s, status %d, %s.%s, saying %q", c.name, c.o, c.kind, c.status, c.server, c.tool, c.says)
		}
	}
	if !got.SchemaError {
		t.Error("echo with a number: want the child's isError result")
	}
	// log writes JSON records to stderr, never stdout.
	testenv.WaitFor(t, "the log record on stderr", func() bool {
		for l := range strings.Lines(stderr.String()) {
			var rec struct{ Level, Msg string }
			if json.Unmarshal([]byte(l), &rec) == nil && rec.Msg == "logged" && rec.Level == "info" {
				return true
			}
		}
		return false
	})

	if l := next("ready-to-abort"); l != "ready-to-abort" {
		t.Fatalf("the script printed %q, want ready-to-abort", l)
	}
	testenv.WaitFor(t, "the child sleeping", func() bool { return strings.Contains(d.Logs.String(), "sleeping 60000ms") })
	io.WriteString(stdin, "abort\n")
	var aborted struct{ Aborted outcome }
	if l := next("the abort's outcome"); json.Unmarshal([]byte(l), &aborted) != nil || aborted.Aborted.Kind != wire.KindCanceled {
		t.Errorf("the aborted call: %q, want an McpxError of kind canceled", l)
	}
	testenv.WaitFor(t, `"cancelled sleep" from the child`, func() bool { return strings.Contains(d.Logs.String(), "cancelled sleep") })
}
