package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/scripts"
	"mcpx.dev/mcpx/scripts/runner"
	"mcpx.dev/mcpx/wire"
)

func TestMain(m *testing.M) {
	demo.MaybeServe() // a demo child of the test daemon: serve and exit
	os.Exit(m.Run())
}

// broker is a daemon of package apitest (the API over a real broker)
// serving the demo server at scope on a unix socket and loopback TCP,
// until the test ends.
type broker struct {
	unix  *client.Client
	url   string // loopback TCP
	token string // its bearer token
}

func startBroker(t testing.TB, scope string) *broker {
	t.Helper()
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "` + scope + `"}`}),
		StateDir: filepath.Join(t.TempDir(), "state")})
	return &broker{unix: client.New(d.Sock, client.Options{}), url: "http://" + d.TCPAddr, token: apitest.Token}
}

// TestScript: a run mints its session (the caller's its parent) and holds
// a lease of its own; the script gets both, calls a tool through the
// generated client and returns its result, all in the envelope; Close
// stops the session (its instance is gone) and releases the lease.
func TestScript(t *testing.T) {
	node := scripts.Runtime{Name: "node", Path: testenv.Node(t)}
	b := startBroker(t, "session")
	// The script reaches this daemon by URL (no daemon record here).
	t.Setenv("MCPX_URL", b.url)
	t.Setenv("MCPX_TOKEN", b.token)
	dir := t.TempDir()
	script := filepath.Join(dir, "greet.ts")
	testenv.WriteFile(t, script, `import { demo } from "mcpx";
export default async (a: { message: string }) => {
  const r = await demo.echo({ message: a.message });
  const e = process.env;
  return { echoed: r.content[0].text, session: e.MCPX_SESSION_ID, parent: e.MCPX_PARENT_SESSION_ID, lease: e.MCPX_LEASE };
};
`)
	ctx := t.Context()
	r, err := runner.Start(ctx, runner.Options{Client: b.unix, Caller: client.Caller{Cwd: dir, Session: "ignored"}, ParentSession: "outer", LeaseTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	caller := r.Caller()
	if !strings.HasPrefix(caller.Session, "run-") || caller.ParentSession != "outer" || caller.Lease == "" {
		t.Errorf("the run's caller %+v, want a minted session, the parent outer and a lease", caller)
	}
	env, err := r.Script(ctx, runner.Script{Runtime: node, Path: script, Args: json.RawMessage(`{"message":"hi"}`), Cache: filepath.Join(dir, "cache"), Envelope: true})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"echoed":"hi","session":%q,"parent":"outer","lease":%q}`, caller.Session, caller.Lease)
	if env.ExitCode != 0 || string(env.Result) != want || env.Session != caller.Session || env.Runtime != "node" ||
		len(env.Calls) != 1 || env.Calls[0] != (scripts.Call{Server: "demo", Tool: "echo", Ms: env.Calls[0].Ms, Outcome: "ok"}) {
		t.Errorf("envelope %+v\nwant the result %s and one call", env, want)
	}
	sessions, _, err := b.unix.Sessions(ctx)
	if err != nil || len(sessions.Sessions) != 1 || sessions.Sessions[0].Key != "session:"+caller.Session {
		t.Errorf("sessions during the run: %+v, %v; want the run's", sessions, err)
	}
	if err := r.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	if sessions, _, err := b.unix.Sessions(ctx); err != nil || len(sessions.Sessions) != 0 {
		t.Errorf("sessions after the run: %+v, %v; want none", sessions, err)
	}
	_, err = b.unix.CallTool(ctx, client.Caller{Cwd: dir, Lease: caller.Lease}, "demo", "echo", json.RawMessage(`{"message":"x"}`), nil)
	if p := (*wire.Problem)(nil); !errors.As(err, &p) || p.Field != wire.HeaderLease {
		t.Errorf("a call under the released lease: %v, want it refused", err)
	}
}

// TestStartFails: a Start that cannot take its lease (its context is
// over) fails with nothing held, closing the relay it had started.
func TestStartFails(t *testing.T) {
	b := startBroker(t, "global")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r, err := runner.Start(ctx, runner.Options{Client: b.unix, Caller: client.Caller{Cwd: t.TempDir()}, Relay: true})
	if err == nil {
		r.Close(t.Context())
		t.Fatal("Start with its context over took a lease")
	}
	if r != nil {
		t.Errorf("a failed Start returned a run %+v", r)
	}
}

// TestScriptErrors: a session and lease of the caller's are used, not
// minted, and left alone at Close; a script esbuild refuses is an runner.Error of
// runner.OpBundle, a runtime that does not start one of runner.OpStart (exit 127); the
// exit code is the script's otherwise.
func TestScriptErrors(t *testing.T) {
	node := scripts.Runtime{Name: "node", Path: testenv.Node(t)}
	b := startBroker(t, "global")
	ctx := t.Context()
	lease, err := b.unix.AcquireLease(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r, err := runner.Start(ctx, runner.Options{Client: b.unix, Caller: client.Caller{Cwd: dir, Lease: lease.ID}, Session: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Caller(); c.Session != "mine" || c.Lease != lease.ID {
		t.Errorf("the run's caller %+v, want the session and lease given", c)
	}
	bad, exits := filepath.Join(dir, "bad.ts"), filepath.Join(dir, "exits.js")
	testenv.WriteFile(t, bad, "export default ( =>\n")
	testenv.WriteFile(t, exits, "process.exitCode = 3;\n")
	cache := filepath.Join(dir, "cache")
	var re *runner.Error
	if _, err := r.Script(ctx, runner.Script{Runtime: node, Path: bad, Cache: cache}); !errors.As(err, &re) || re.Op != runner.OpBundle || !strings.Contains(err.Error(), "bad.ts:1:") {
		t.Errorf("a script that does not parse: %v, want a bundle runner.Error naming the file and line", err)
	}
	env, err := r.Script(ctx, runner.Script{Runtime: scripts.Runtime{Name: "node", Path: filepath.Join(dir, "no-node")}, Path: exits, Cache: cache})
	if !errors.As(err, &re) || re.Op != runner.OpStart || env.ExitCode != 127 || !strings.HasPrefix(err.Error(), "starting node: ") {
		t.Errorf("a runtime that is not there: %d, %v; want 127 and a start runner.Error", env.ExitCode, err)
	}
	if env, err := r.Script(ctx, runner.Script{Runtime: node, Path: exits, Cache: cache}); err != nil || env.ExitCode != 3 {
		t.Errorf("a script that exits 3: %d, %v", env.ExitCode, err)
	}
	if err := r.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := b.unix.RenewLease(ctx, lease.ID, 0); err != nil {
		t.Errorf("the caller's lease after the run: %v, want it left alone", err)
	}
	if ents, _ := os.ReadDir(cache); len(ents) != 1 || !strings.HasPrefix(ents[0].Name(), "client-") {
		t.Errorf("the cache holds %v, want the client module and no run's directory", ents)
	}
}

// TestClientCache: the run keeps the generated client as client-<ETag>.ts
// and asks for it with If-None-Match: an unchanged module is answered 304
// and the kept file used as it is (its content here is a marker a 200
// would have overwritten); the cache keeps the runner.KeepClients most recently
// used modules and nothing else of its own.
func TestClientCache(t *testing.T) {
	b := startBroker(t, "global")
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	caller := client.Caller{Cwd: dir}
	first, err := runner.ClientModule(t.Context(), b.unix, caller, cache)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(first)
	if err != nil || !strings.Contains(string(src), "export const demo = {") || !runner.ValidTag(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(first), "client-"), ".ts")) {
		t.Fatalf("the first fetch wrote %s: %.200s, %v", first, src, err)
	}
	if err := os.WriteFile(first, []byte("// kept\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := runner.ClientModule(t.Context(), b.unix, caller, cache)
	if b, _ := os.ReadFile(again); err != nil || again != first || string(b) != "// kept\n" {
		t.Errorf("the second fetch: %s, %v, holding %.100q; want the kept %s, answered 304", again, err, b, first)
	}

	// Older modules beyond runner.KeepClients are pruned, the newest kept.
	old := time.Now().Add(-time.Hour)
	var stale []string
	for i := range runner.KeepClients + 2 {
		p := filepath.Join(cache, fmt.Sprintf("client-%032x.ts", i))
		if err := os.WriteFile(p, []byte("// old\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old.Add(time.Duration(i)*time.Minute), old.Add(time.Duration(i)*time.Minute))
		stale = append(stale, p)
	}
	os.Remove(first) // the broker's module is new to the cache again: a 200
	path, err := runner.ClientModule(t.Context(), b.unix, caller, cache)
	if err != nil || path != first {
		t.Fatalf("fetch after the cache filled: %s, %v", path, err)
	}
	left := runner.KeptClients(cache)
	if len(left) != runner.KeepClients || left[0] != first || left[1] != stale[len(stale)-1] {
		t.Errorf("the cache keeps %v, want %d modules: the new one first, then the newest old ones", left, runner.KeepClients)
	}
}

// TestInterpreterScript: a script on an interpreter gets its arguments,
// the run's session and lease, Env and, with Relay for a local broker,
// the relay's URL and per-run token, through which it calls the demo's
// echo itself; its exit code and output are in the envelope, named by
// the interpreter.
func TestInterpreterScript(t *testing.T) {
	b := startBroker(t, "global")
	t.Setenv("MCPX_URL", "http://127.0.0.1:1") // the caller's: the run's relay wins
	dir := t.TempDir()
	script := filepath.Join(dir, "echo.sh")
	testenv.WriteFile(t, script, `curl -sS --fail-with-body "$MCPX_URL/v1/servers/demo/tools/echo" -H "Authorization: Bearer $MCPX_TOKEN" \
  -H "Content-Type: application/json" -H "Mcpx-Session: $MCPX_SESSION_ID" -d "{\"message\": \"$1 $2\"}" || exit 9
echo
echo "$MCPX_SESSION_ID $MCPX_LEASE $EXTRA"
exit 5
`)
	ctx := t.Context()
	r, err := runner.Start(ctx, runner.Options{Client: b.unix, Caller: client.Caller{Cwd: dir}, Relay: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	env, err := r.Script(ctx, runner.Script{Interpreter: []string{"/bin/sh"}, Path: script, Argv: []string{"a", "b"}, Env: []string{"EXTRA=x"},
		Cache: filepath.Join(dir, "cache"), Envelope: true})
	if err != nil {
		t.Fatal(err)
	}
	c := r.Caller()
	result, rest, _ := strings.Cut(env.Stdout, "\n")
	want := c.Session + " " + c.Lease + " x\n"
	if env.ExitCode != 5 || env.Runtime != "sh" || !strings.Contains(result, `"content":[{"type":"text","text":"a b"}]`) || rest != want || len(env.Calls) != 0 {
		t.Errorf("envelope %+v\nwant exit 5 on sh, the echo's result and %q", env, want)
	}
	if got := runner.InterpreterName([]string{"/usr/bin/env", "-S python3 -u"}); got != "python3" {
		t.Errorf("interpreterName of env -S python3 = %q", got)
	}
}
