package pool_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/proctree"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/pool"
)

// envSetsidDir is where supervisedDaemon's child writes the pids of the
// two sleeps it starts in sessions of their own.
const envSetsidDir = "MCPX_TEST_SETSID_DIR"

// supervisedDaemon is a stand-in daemon as the real one runs: Supervise on
// a state directory, then a pool whose one child starts `setsid sleep
// 1000` twice before serving the demo. It prints the child's pid once the
// child has answered, and waits to be killed.
func supervisedDaemon() {
	dir := os.Getenv(envSetsidDir)
	if _, err := pool.Supervise(filepath.Join(dir, "state"), nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	p := pool.New(pool.Options{})
	script := `for i in 1 2; do setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! >"$1/sleep$i.pid"; done; exec "$0"`
	p.SetServers([]pool.Server{{Name: "demo", Command: "/bin/sh", Args: []string{"-c", script, os.Args[0], dir},
		Env: map[string]string{demo.EnvServer: "1", envPoolDaemon: "", envSetsidDir: ""}}})
	serveOneChild(p)
}

// TestSetsidGrandchildrenDieWithAKilledDaemon (real-use 8): a daemon
// killed by SIGKILL leaves nothing its children started, not even what
// they started in sessions of their own, with no daemon started after it.
func TestSetsidGrandchildrenDieWithAKilledDaemon(t *testing.T) {
	proctest.CheckNoLeaks(t)
	dir := t.TempDir()
	d, child := startStandIn(t, envPoolDaemon+"=supervised", envSetsidDir+"="+dir)
	var sleeps []proctree.Proc
	for _, f := range []string{"sleep1.pid", "sleep2.pid"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		p, ok := proctree.Read(pid)
		if err != nil || !ok {
			d.Process.Kill()
			d.Wait()
			t.Fatalf("no sleep in %s (%q): %v", f, b, err)
		}
		sleeps = append(sleeps, p)
	}
	killed := time.Now()
	d.Process.Kill()
	d.Wait()
	for _, s := range sleeps {
		testenv.WaitFor(t, fmt.Sprintf("the setsid'd sleep %d to be killed", s.Pid), func() bool { return !s.Alive() })
	}
	t.Logf("the sleeps were killed %v after the daemon", time.Since(killed))
	waitGone(t, child)
}

// BenchmarkSpawnWatchdog measures what the watchdog costs (real-use 8):
// "spawn/plain" and "spawn/supervised" are a child's spawn, initialize and
// first echo without and with a Supervisor (and its watchdog) active — the
// watchdog is one process per daemon, so they should not differ; "start"
// is Supervise and Close themselves, the watchdog's start and stop, paid
// once per daemon.
func BenchmarkSpawnWatchdog(b *testing.B) {
	def := pool.Server{Name: "demo", Command: os.Args[0], Env: map[string]string{demo.EnvServer: "1", "GORACE": "atexit_sleep_ms=0"}}
	tg := pool.Target{Server: "demo", Key: "global"}
	spawn := func(b *testing.B) {
		for b.Loop() {
			p := pool.New(pool.Options{ReapInterval: -1, ExecWatch: -1})
			p.SetServers([]pool.Server{def})
			if err := p.Do(b.Context(), tg, benchEcho(b.Context())); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			p.Close(context.Background())
			b.StartTimer()
		}
	}
	b.Run("spawn/plain", spawn)
	b.Run("spawn/supervised", func(b *testing.B) {
		sup, err := pool.Supervise(b.TempDir(), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer sup.Close()
		spawn(b)
	})
	b.Run("start", func(b *testing.B) {
		dir := b.TempDir()
		for b.Loop() {
			sup, err := pool.Supervise(dir, nil)
			if err != nil {
				b.Fatal(err)
			}
			sup.Close()
		}
	})
}
