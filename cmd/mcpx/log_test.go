package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestLogFollowShowsCrash: `mcpx log --follow` prints a child's crash as
// it happens; the records are in the state directory's log file; `mcpx
// log --json --level warn` reads them back filtered; and a server's own
// level lets its debug records through while the others stay at info.
func TestLogFollowShowsCrash(t *testing.T) {
	proctest.CheckNoLeaks(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(t)}
	cfg, _ := json.Marshal(map[string]any{
		"log": map[string]any{"level": "info", "servers": map[string]any{"demo": "debug"}},
		"servers": map[string]any{
			"demo":  map[string]any{"command": exe, "scope": "global", "env": env},
			"other": map[string]any{"command": exe, "scope": "global", "env": env},
		}})
	cfgPath, sock, state := filepath.Join(dir, "config.json"), filepath.Join(dir, "mcpx.sock"), filepath.Join(dir, "state")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan int, 1)
	stderr := &testenv.SyncBuffer{}
	go func() {
		served <- run(ctx, []string{"serve", "--config", cfgPath, "--socket", sock, "--state-dir", state, "--listen", "off"},
			strings.NewReader(""), &testenv.SyncBuffer{}, stderr)
	}()
	defer func() {
		stop()
		if code := <-served; code != exitOK {
			t.Errorf("serve exited %d:\n%s", code, stderr.String())
		}
	}()
	testenv.WaitFor(t, "the socket to answer", func() bool { return client.Answers(sock) })
	call := func(tool, args string) int {
		return run(t.Context(), []string{"call", "--broker", sock, tool, args}, strings.NewReader(""), &testenv.SyncBuffer{}, &testenv.SyncBuffer{})
	}
	if code := call("demo.echo", `{"message":"hi"}`); code != exitOK {
		t.Fatalf("demo.echo exited %d", code)
	}

	followCtx, stopFollow := context.WithCancel(context.Background())
	followed := make(chan int, 1)
	out := &testenv.SyncBuffer{}
	go func() {
		followed <- run(followCtx, []string{"log", "--broker", sock, "--follow", "--server", "demo"}, strings.NewReader(""), out, &testenv.SyncBuffer{})
	}()
	defer func() {
		stopFollow()
		if code := <-followed; code != exitOK {
			t.Errorf("mcpx log --follow exited %d", code)
		}
	}()
	// The kept records come first: once the spawn is printed, the stream
	// is live and the crash below is written after it began.
	testenv.WaitFor(t, "the follower to print the spawn", func() bool { return strings.Contains(out.String(), "INFO spawned") })
	if strings.Contains(out.String(), "exited unexpectedly") {
		t.Fatalf("a crash before the crash:\n%s", out)
	}
	call("demo.crash", `{}`)
	testenv.WaitFor(t, "the follower to print the crash", func() bool {
		return strings.Contains(out.String(), "WARN child exited unexpectedly") && strings.Contains(out.String(), "server=demo")
	})

	// Read back: warn and above, as JSON, only the crash of demo.
	if code := call("other.echo", `{"message":"hi"}`); code != exitOK {
		t.Fatalf("other.echo exited %d", code)
	}
	back := &testenv.SyncBuffer{}
	if code := run(t.Context(), []string{"log", "--broker", sock, "--json", "--level", "warn"}, strings.NewReader(""), back, &testenv.SyncBuffer{}); code != exitOK {
		t.Fatalf("mcpx log exited %d", code)
	}
	var crashes int
	for _, line := range strings.Split(strings.TrimSpace(back.String()), "\n") {
		var rec struct{ Level, Msg, Server string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("mcpx log --json printed %q: %v", line, err)
		}
		if rec.Level != "WARN" && rec.Level != "ERROR" {
			t.Errorf("--level warn printed a %s record: %s", rec.Level, line)
		}
		if rec.Msg == "child exited unexpectedly" && rec.Server == "demo" {
			crashes++
		}
	}
	if crashes != 1 {
		t.Errorf("read back %d crashes of demo, want 1:\n%s", crashes, back)
	}
	// The file: demo's debug records are kept (its level is debug), other's are not.
	data, err := os.ReadFile(filepath.Join(state, "logs", "mcpx.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var demoDebug, otherDebug int
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rec struct{ Level, Server string }
		json.Unmarshal([]byte(line), &rec)
		if rec.Level == "DEBUG" && rec.Server == "demo" {
			demoDebug++
		}
		if rec.Level == "DEBUG" && rec.Server == "other" {
			otherDebug++
		}
	}
	if demoDebug == 0 || otherDebug != 0 {
		t.Errorf("debug records: demo %d (want some), other %d (want none)", demoDebug, otherDebug)
	}
}
