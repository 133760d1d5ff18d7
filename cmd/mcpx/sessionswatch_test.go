package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestSessionsWatch: `mcpx sessions watch <name>` prints that session's
// calls as they finish — time, server.tool, duration, outcome, caller —
// and no other session's, until interrupted.
func TestSessionsWatch(t *testing.T) {
	proctest.CheckNoLeaks(t)
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sock, cfgPath := filepath.Join(dir, "mcpx.sock"), filepath.Join(dir, "config.json")
	env := map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(t)}
	cfg, _ := json.Marshal(map[string]any{"servers": map[string]any{"s": map[string]any{"command": exe, "scope": "session", "env": env}}})
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan int, 1)
	logs := &testenv.SyncBuffer{}
	go func() {
		served <- run(ctx, []string{"serve", "--config", cfgPath, "--socket", sock, "--state-dir", filepath.Join(dir, "state"), "--listen", "off"},
			strings.NewReader(""), &testenv.SyncBuffer{}, logs)
	}()
	t.Cleanup(func() {
		stop()
		if code := <-served; code != exitOK {
			t.Errorf("serve exited %d:\n%s", code, logs.String())
		}
	})
	testenv.WaitFor(t, "the socket to answer", func() bool { return client.Answers(sock) })
	mcpx := func(args ...string) (string, string, int) {
		var out, errOut strings.Builder
		code := run(t.Context(), append([]string{args[0], "--broker", sock}, args[1:]...), strings.NewReader(""), &out, &errOut)
		return out.String(), errOut.String(), code
	}
	must := func(args ...string) {
		t.Helper()
		if _, errOut, code := mcpx(args...); code != exitOK {
			t.Fatalf("mcpx %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
	}
	must("call", "--session", "b1", "s.echo", `{"message":"x"}`)
	must("call", "--session", "b2", "s.pid")
	must("sessions", "set", "session:b1", "--name", "mybrowser")

	if _, errOut, code := mcpx("sessions", "watch", "nosuch"); code != exitFailed || !strings.Contains(errOut, `no session "nosuch"`) {
		t.Errorf("watching an unknown session: exit %d, %q", code, errOut)
	}

	wctx, stopWatch := context.WithCancel(t.Context())
	watched := make(chan int, 1)
	out := &testenv.SyncBuffer{}
	go func() {
		watched <- run(wctx, []string{"sessions", "watch", "--broker", sock, "mybrowser"}, strings.NewReader(""), out, &testenv.SyncBuffer{})
	}()
	// Calls made before the watch is on are not shown: call until one is.
	testenv.WaitFor(t, "the watch to print a call", func() bool {
		must("call", "--session", "b2", "s.pid")
		must("call", "--session", "b1", "s.echo", `{"message":"x"}`)
		return strings.Contains(out.String(), "s.echo")
	})
	stopWatch()
	if code := <-watched; code != exitOK {
		t.Errorf("mcpx sessions watch exited %d", code)
	}
	line := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d\.\d{3} s\.echo \S+ ok local:\d+$`)
	if !line.MatchString(out.String()) || strings.Contains(out.String(), "s.pid") {
		t.Errorf("mcpx sessions watch mybrowser printed\n%s\nwant session:b1's echo calls only", out.String())
	}
}
