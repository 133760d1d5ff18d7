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
	"mcpx.dev/mcpx/internal/proctree"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/pool"
)

// setsidFixture is a config whose one server starts n `setsid sleep
// 1000` before serving the demo, each writing its pid to a file, and a way
// to start `mcpx serve` on it.
type setsidFixture struct {
	t                 *testing.T
	mcpx, sock, state string
	cfg               string
	pidfiles          []string
}

func newSetsidFixture(t *testing.T, n int) *setsidFixture {
	t.Helper()
	mcpx, err := exec.LookPath("mcpx") // testscript.Main put the test binary there
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := &setsidFixture{t: t, mcpx: mcpx, sock: filepath.Join(dir, "mcpx.sock"), state: filepath.Join(dir, "state"), cfg: filepath.Join(dir, "config.json")}
	script := ""
	for i := range n {
		f.pidfiles = append(f.pidfiles, filepath.Join(dir, fmt.Sprintf("gc%d.pid", i)))
		script += fmt.Sprintf(`setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! >"$1/gc%d.pid"; `, i)
	}
	cfg, _ := json.Marshal(map[string]any{"servers": map[string]any{"demo": map[string]any{
		"command": "/bin/sh", "scope": "global",
		"args": []string{"-c", script + `exec "$0"`, exe, dir},
		"env":  map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(t)},
	}}})
	if err := os.WriteFile(f.cfg, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// daemon starts `mcpx serve` and waits until it serves.
func (f *setsidFixture) daemon() (*exec.Cmd, *testenv.SyncBuffer) {
	t := f.t
	t.Helper()
	var logs testenv.SyncBuffer
	cmd := exec.Command(f.mcpx, "serve", "--config", f.cfg, "--socket", f.sock, "--state-dir", f.state)
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

// grandchildren starts the server with a call and returns the pids of the
// sleeps it left, each checked to carry its mark.
func (f *setsidFixture) grandchildren() []int {
	t := f.t
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"call", "--broker", f.sock, "demo.pid"}, strings.NewReader(""), &out, &errOut); code != exitOK {
		t.Fatalf("demo.pid: exit %d: %s", code, errOut.String())
	}
	var pids []int
	for _, pf := range f.pidfiles {
		b, err := os.ReadFile(pf)
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
		pids = append(pids, gc)
	}
	return pids
}

// TestFaultSetsidGrandchildrenDieWithTheDaemon (real-use 8): a daemon
// killed with SIGKILL takes its children with it (their parent-death
// signal) and, through its watchdog, what they started in sessions of
// their own, with no daemon started after it.
func TestFaultSetsidGrandchildrenDieWithTheDaemon(t *testing.T) {
	proctest.CheckNoLeaks(t)
	f := newSetsidFixture(t, 2)
	d, _ := f.daemon()
	gcs := f.grandchildren()
	d.Process.Signal(syscall.SIGKILL)
	d.Wait()
	for _, gc := range gcs {
		testenv.WaitFor(t, fmt.Sprintf("grandchild %d to be killed", gc), func() bool { return !running(gc) })
	}
}

// TestFaultSetsidGrandchildAfterDaemonKill: a daemon killed with SIGKILL
// together with its watchdog (as a kill of every process of the user
// would) leaves a grandchild that left for a session of its own; the next
// daemon on the same state directory kills it at start.
func TestFaultSetsidGrandchildAfterDaemonKill(t *testing.T) {
	proctest.CheckNoLeaks(t)
	f := newSetsidFixture(t, 1)
	first, _ := f.daemon()
	gc := f.grandchildren()[0]
	watchdog := watchdogOf(t, first.Process.Pid)
	syscall.Kill(watchdog, syscall.SIGKILL)
	testenv.WaitFor(t, "the watchdog to be killed", func() bool { return !running(watchdog) })
	first.Process.Signal(syscall.SIGKILL)
	first.Wait()
	time.Sleep(100 * time.Millisecond) // the parent-death signals are on their way
	if !running(gc) {
		t.Fatalf("grandchild %d died with the daemon; the test proves nothing", gc)
	}

	second, logs := f.daemon()
	testenv.WaitFor(t, "the leftover grandchild to be killed", func() bool { return !running(gc) })
	if !strings.Contains(logs.String(), "killed processes left by an earlier daemon") {
		t.Errorf("the restart does not log the kill:\n%s", logs.String())
	}
	second.Process.Signal(syscall.SIGTERM)
	second.Wait()
}

// watchdogOf finds the watchdog of the daemon pid: its child whose
// environment names a state directory to watch.
func watchdogOf(t *testing.T, daemon int) int {
	t.Helper()
	for _, p := range proctree.All() {
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.Pid))
		if p.PPid == daemon && bytes.Contains(env, []byte("\x00MCPX_WATCHDOG=")) {
			return p.Pid
		}
	}
	t.Fatalf("daemon %d has no watchdog", daemon)
	return 0
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
