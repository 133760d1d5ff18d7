package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestSurviveProcess is pool.survive's acceptance test with real
// processes: a `mcpx serve` is SIGKILLed while a call is in flight; that
// caller is told its broker died; the next `mcpx serve` on the same state
// directory adopts the stdio children — a global one and a session's, each
// with its pid and its in-memory counter — and stops them when it stops.
func TestSurviveProcess(t *testing.T) {
	t.Parallel() // a process test (plain_test.go)
	mcpx, dir, marker := processTest(t)
	childEnv := map[string]string{proctest.MarkerEnv: proctest.Marker(t)}
	cfg, _ := json.Marshal(map[string]any{"pool": map[string]any{"survive": true}, "servers": map[string]any{
		"g": map[string]any{"command": mcpx, "args": []string{"demo-server"}, "scope": "global", "env": childEnv},
		"s": map[string]any{"command": mcpx, "args": []string{"demo-server"}, "scope": "session", "env": childEnv},
	}})
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), marker, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_STATE_HOME="+filepath.Join(dir, "xstate"))
	ctx := t.Context()
	global, agent := client.Caller{Cwd: dir}, client.Caller{Cwd: dir, Session: "agent-1"}

	first := startUpgradeDaemon(t, mcpx, dir, cfgPath, env)
	for _, c := range []struct {
		server string
		caller client.Caller
	}{{"g", global}, {"s", agent}} {
		if got, err := callText(ctx, first.bc, c.caller, c.server, "counter", "{}"); err != nil || got != "1" {
			t.Fatalf("%s counter: %q, %v\n%s", c.server, got, err, first.logs.String())
		}
	}
	before := first.instances()
	if len(before) != 2 {
		t.Fatalf("instances before the kill: %v", before)
	}
	// A call in flight when the daemon dies.
	inFlight := make(chan error, 1)
	go func() {
		_, err := callText(ctx, client.New(first.sock, client.Options{}), global, "g", "sleep", `{"ms": 2000}`)
		inFlight <- err
	}()
	testenv.WaitFor(t, "the sleep call in flight", func() bool { return first.instances()["g-1"].InFlight == 1 })
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.cmd.Wait() //nolint:errcheck // killed
	var gone *client.GoneError
	if err := <-inFlight; !errors.As(err, &gone) {
		t.Errorf("the call in flight at the kill: %v; want the broker gone", err)
	}
	for id, in := range before {
		if !running(in.Pid) {
			t.Errorf("%s (pid %d) died with the daemon", id, in.Pid)
		}
	}

	next := startUpgradeDaemon(t, mcpx, dir, cfgPath, env)
	after := next.instances()
	for id, in := range before {
		if a, ok := after[id]; !ok || a.Pid != in.Pid {
			t.Errorf("%s: pid %d before the kill, %+v after\n%s", id, in.Pid, a, next.logs.String())
		}
	}
	for _, c := range []struct {
		server string
		caller client.Caller
	}{{"g", global}, {"s", agent}} {
		if got, err := callText(ctx, next.bc, c.caller, c.server, "counter", "{}"); err != nil || got != "2" {
			t.Errorf("%s counter after the restart: %q, %v (want 2: the same child, its state kept)", c.server, got, err)
		}
	}
	if out, err := next.cli("daemon", "stop", "--broker", next.sock); err != nil {
		t.Errorf("daemon stop: %v: %s", err, out)
	}
	next.waitExit()
	for id, in := range before {
		testenv.WaitFor(t, id+" stopped with the daemon", func() bool { return !running(in.Pid) })
	}
}
