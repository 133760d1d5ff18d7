package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/proctest"
	"mcpx.dev/mcpx/internal/testenv"
	"mcpx.dev/mcpx/pool"
)

// TestFaultSetsidGrandchildAfterDaemonKill: a daemon killed with SIGKILL
// takes its children with it (their parent-death signal) but not a
// grandchild that left for a session of its own; the next daemon on the
// same state directory kills it at start.
func TestFaultSetsidGrandchildAfterDaemonKill(t *testing.T) {
	proctest.CheckNoLeaks(t)
	mcpx, err := exec.LookPath("mcpx") // testscript.Main put the test binary there
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sock, state, pidfile := filepath.Join(dir, "mcpx.sock"), filepath.Join(dir, "state"), filepath.Join(dir, "gc.pid")
	cfg, _ := json.Marshal(map[string]any{"servers": map[string]any{"demo": map[string]any{
		"command": "/bin/sh", "scope": "global",
		"args": []string{"-c", `setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! >"$1"; exec "$0"`, exe, pidfile},
		"env":  map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(t)},
	}}})
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	daemon := func() (*exec.Cmd, *testenv.SyncBuffer) {
		var logs testenv.SyncBuffer
		cmd := exec.Command(mcpx, "serve", "--config", cfgPath, "--socket", sock, "--state-dir", state)
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		testenv.WaitFor(t, "the daemon's socket", func() bool {
			return strings.Contains(logs.String(), "mcpx serving")
		})
		return cmd, &logs
	}

	first, _ := daemon()
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"call", "--broker", sock, "demo.pid"}, strings.NewReader(""), &out, &errOut); code != exitOK {
		t.Fatalf("demo.pid: exit %d: %s", code, errOut.String())
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if !marked(gc) {
		t.Fatalf("grandchild %d carries no %s", gc, pool.MarkEnv)
	}

	first.Process.Signal(syscall.SIGKILL)
	first.Wait()
	time.Sleep(100 * time.Millisecond) // the parent-death signals are on their way
	if !running(gc) {
		t.Fatalf("grandchild %d died with the daemon; the test proves nothing", gc)
	}

	second, logs := daemon()
	testenv.WaitFor(t, "the leftover grandchild to be killed", func() bool { return !running(gc) })
	if !strings.Contains(logs.String(), "killed processes left by an earlier daemon") {
		t.Errorf("the restart does not log the kill:\n%s", logs.String())
	}
	second.Process.Signal(syscall.SIGTERM)
	second.Wait()
}

// running reports whether pid is a live process (not gone, not a zombie).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && len(b) > i+2 && b[i+2] != 'Z'
}

func marked(pid int) bool {
	env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	return bytes.Contains(env, []byte(pool.MarkEnv+"="))
}
