package proc_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/proctree"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/pool/proc"
)

// envStandIn makes this test binary a stand-in daemon (supervisedDaemon),
// working in the directory it names.
const envStandIn = "MCPX_TEST_PROC_DAEMON"

// supervisedDaemon is a stand-in daemon as the real one runs: Supervise on
// a state directory, then one child, started by a spawner, that starts
// `setsid sleep 1000` twice (writing their pids in the directory) and
// becomes a sleep itself. It prints the child's pid once the child has
// written the sleeps' pids, and waits to be killed.
func supervisedDaemon() {
	dir := os.Getenv(envStandIn)
	if _, err := proc.Supervise(filepath.Join(dir, "state"), nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	script := `for i in 1 2; do setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! >"$1/sleep$i.pid"; done; echo started; exec sleep 1000`
	c, err := proc.NewSpawner().Start(context.Background(), proc.Command{Path: "/bin/sh", Args: []string{"sh", "-c", script, "sh", dir},
		Env: proc.Environ(os.Environ(), proc.Env{})})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if _, err := bufio.NewReader(c.Stdout()).ReadString('\n'); err != nil {
		fmt.Fprintln(os.Stderr, "the child did not start its sleeps:", err)
		os.Exit(1)
	}
	fmt.Println(c.Pid())
	select {}
}

// startStandIn starts this test binary as a supervised daemon working in
// dir, and returns it and its child's pid.
func startStandIn(t *testing.T, dir string) (*exec.Cmd, int) {
	t.Helper()
	d := exec.Command(os.Args[0], "-test.run=^$")
	d.Env = append(os.Environ(), envStandIn+"="+dir, proctest.Env(t))
	out, err := d.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d.Stderr = os.Stderr
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	child, _ := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || child <= 0 || syscall.Kill(child, 0) != nil {
		d.Process.Kill()
		d.Wait()
		t.Fatalf("the stand-in daemon reported child pid %q: %v", line, err)
	}
	return d, child
}

// TestSetsidGrandchildrenDieWithAKilledDaemon (real-use 8): a daemon
// killed by SIGKILL leaves nothing its children started, not even what
// they started in sessions of their own, with no daemon started after it:
// its watchdog kills them, and the child, by their mark.
func TestSetsidGrandchildrenDieWithAKilledDaemon(t *testing.T) {
	proctest.CheckNoLeaks(t)
	dir := t.TempDir()
	d, child := startStandIn(t, dir)
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
	c, _ := proctree.Read(child)
	sleeps = append(sleeps, c)
	t.Cleanup(func() { // if the test fails, it leaves nothing behind either
		for _, s := range sleeps {
			proctree.KillIf(s.Pid, s.Alive)
		}
	})
	killed := time.Now()
	d.Process.Kill()
	d.Wait()
	for _, s := range sleeps {
		testenv.WaitFor(t, fmt.Sprintf("the marked process %d to be killed", s.Pid), func() bool { return !s.Alive() })
	}
	t.Logf("the sleeps were killed %v after the daemon", time.Since(killed))
}
