package pool_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/pool"
	"mcpx.dev/mcpx/pool/proc"
)

// envSurviveDir is the state directory's parent of survivingDaemon;
// envSurvive its Options.Survive ("1" or ""); envSurviveTmp=system leaves
// its Options.TmpDir "" (os.TempDir()).
const (
	envSurviveDir = "MCPX_TEST_SURVIVE_DIR"
	envSurvive    = "MCPX_TEST_SURVIVE"
	envSurviveTmp = "MCPX_TEST_SURVIVE_TMP"
)

// surviveDef is the demo server the survive tests run, marked for the leak
// checks; extra env changes its definition.
func surviveDef(marker string, extra ...string) pool.Server {
	env := map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: marker, envPoolDaemon: "", envSurviveDir: "", envSurvive: ""}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return pool.Server{Name: "demo", Command: os.Args[0], Env: env}
}

func surviveOptions(dir string, survive bool) pool.Options {
	tmp := filepath.Join(dir, "tmp")
	if os.Getenv(envSurviveTmp) == "system" {
		tmp = ""
	}
	return pool.Options{Survive: survive, SurviveFile: filepath.Join(dir, "state", "survive.json"), TmpDir: tmp, ReapInterval: -1, ExecWatch: -1,
		Egress: standInEgress()}
}

// tmpParent is where surviveOptions(dir, ...) has the run directories made.
func tmpParent(dir string) string {
	if os.Getenv(envSurviveTmp) == "system" {
		return os.TempDir()
	}
	return filepath.Join(dir, "tmp")
}

// survivingDaemon is a stand-in daemon: Supervise, a pool whose one demo
// child (resServer's, with envResRange) has counted to 2, a call to it in
// flight; it prints the child's pid and waits to be killed.
func survivingDaemon() {
	dir := os.Getenv(envSurviveDir)
	if _, err := proc.Supervise(filepath.Join(dir, "state"), nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	p := pool.New(surviveOptions(dir, os.Getenv(envSurvive) == "1"))
	def := surviveDef(os.Getenv(proctest.MarkerEnv))
	if os.Getenv(envResRange) != "" {
		lo, hi := resRange()
		def = resServer(os.Getenv(proctest.MarkerEnv), lo, hi, filepath.Join(dir, "exit.log"))
	}
	if url := os.Getenv(envRemoteURL); url != "" {
		def = remoteDef(url, false)
	}
	if os.Getenv(envConfined) != "" {
		def = confinedDef(os.Getenv(proctest.MarkerEnv))
	}
	p.SetServers([]pool.Server{def})
	ctx := context.Background()
	tg := standInTarget()
	for range 2 {
		if _, err := call(ctx, p, tg, "counter", nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	// Mid-call when killed: its answer comes to the next daemon, which
	// must drop it (the dead one's id).
	go call(ctx, p, tg, "sleep", map[string]int{"ms": 300})
	for range 1000 {
		if st := p.Instances(); len(st) == 1 && st[0].InFlight > 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The survive file is written after the child is ready: one killed
	// before it was would not be adopted.
	for range 1000 {
		if b, _ := os.ReadFile(filepath.Join(dir, "state", "survive.json")); strings.Contains(string(b), `"demo-1"`) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	fmt.Println(p.Instances()[0].Pid)
	select {}
}

// killedWithAChild starts survivingDaemon (with env added), SIGKILLs it
// mid-call and returns the state directory's parent and its child's pid.
func killedWithAChild(t *testing.T, survive bool, env ...string) (string, int) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "state"), 0o700); err != nil {
		t.Fatal(err)
	}
	flag := ""
	if survive {
		flag = "1"
	}
	d, child := startStandIn(t, append(env, envPoolDaemon+"=survive", envSurviveDir+"="+dir, envSurvive+"="+flag)...)
	d.Process.Kill()
	d.Wait()
	return dir, child
}

// nextDaemon is the daemon started after the killed one, in this process:
// Supervise on the same state directory, a pool of def, AdoptSurvivors.
func nextDaemon(t *testing.T, dir string, survive bool, def pool.Server) (*pool.Pool, pool.Adopted) {
	t.Helper()
	sup, err := proc.Supervise(filepath.Join(dir, "state"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := pool.New(surviveOptions(dir, survive))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		p.Close(ctx)
		sup.Close()
	})
	p.SetServers([]pool.Server{def})
	return p, p.AdoptSurvivors()
}

// TestSurviveAdoptsAKilledDaemonsChild: with Survive, a stdio child of a
// daemon SIGKILLed mid-call lives on, and the next daemon on the same
// state directory adopts it: same pid, same in-memory state (the demo's
// counter goes on from 2), no second initialize, the dead daemon's late
// answer dropped.
func TestSurviveAdoptsAKilledDaemonsChild(t *testing.T) {
	proctest.CheckNoLeaks(t)
	dir, child := killedWithAChild(t, true)
	if !alive(child) {
		t.Fatalf("the child %d died with its daemon", child)
	}
	p, res := nextDaemon(t, dir, true, surviveDef(proctest.Marker(t)))
	if len(res.Adopted) != 1 || len(res.Replaced) != 0 {
		t.Fatalf("adopted %v, replaced %v; want one adopted", res.Adopted, res.Replaced)
	}
	tg := pool.Target{Server: "demo", Key: "global"}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// Past the dead daemon's sleep: its answer is dropped by id.
	if got, err := call(ctx, p, tg, "sleep", map[string]int{"ms": 400}); err != nil {
		t.Fatalf("sleep after the adoption: %q, %v", got, err)
	}
	got, err := call(ctx, p, tg, "counter", nil)
	if err != nil || got != "3" {
		t.Fatalf("counter after the adoption: %q, %v; want 3 (the child's state kept)", got, err)
	}
	if st := p.Instances(); len(st) != 1 || st[0].Pid != child {
		t.Fatalf("instances %+v; want the one child, pid %d", st, child)
	}
}

// TestSurviveReplacesAChangedDefinition: a kept child whose definition
// changed meanwhile is stopped, not adopted; the next call starts anew.
func TestSurviveReplacesAChangedDefinition(t *testing.T) {
	proctest.CheckNoLeaks(t)
	dir, child := killedWithAChild(t, true)
	p, res := nextDaemon(t, dir, true, surviveDef(proctest.Marker(t), "CHANGED", "1"))
	if len(res.Adopted) != 0 || len(res.Replaced) != 1 {
		t.Fatalf("adopted %v, replaced %v; want one replaced", res.Adopted, res.Replaced)
	}
	waitGone(t, child)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	got, err := call(ctx, p, pool.Target{Server: "demo", Key: "global"}, "counter", nil)
	if err != nil || got != "1" {
		t.Fatalf("counter of the new child: %q, %v; want 1", got, err)
	}
}

// TestSurviveOffKillsWithTheDaemon: without Survive a killed daemon's
// child dies with it (its watchdog), and the next daemon adopts nothing.
func TestSurviveOffKillsWithTheDaemon(t *testing.T) {
	proctest.CheckNoLeaks(t)
	dir, child := killedWithAChild(t, false)
	testenv.WaitFor(t, "the child of the killed daemon to die", func() bool { return !alive(child) })
	if _, res := nextDaemon(t, dir, true, surviveDef(proctest.Marker(t))); len(res.Adopted)+len(res.Replaced) != 0 {
		t.Fatalf("adopted %v, replaced %v; want nothing", res.Adopted, res.Replaced)
	}
}

// TestSurviveTurnedOffKillsTheKept: children kept by a daemon with
// Survive are killed by a next daemon without it.
func TestSurviveTurnedOffKillsTheKept(t *testing.T) {
	proctest.CheckNoLeaks(t)
	dir, child := killedWithAChild(t, true)
	if _, res := nextDaemon(t, dir, false, surviveDef(proctest.Marker(t))); len(res.Replaced) != 1 {
		t.Fatalf("replaced %v; want the kept child", res.Replaced)
	}
	waitGone(t, child)
}

// killedWithAResChild is killedWithAChild with a resServer child whose
// range is [lo, lo+1]; it returns the child's status as its file says.
func killedWithAResChild(t *testing.T, lo int) (string, pool.InstanceStatus) {
	t.Helper()
	dir, child := killedWithAChild(t, true, fmt.Sprintf("%s=%d-%d", envResRange, lo, lo+1))
	files, _ := filepath.Glob(filepath.Join(tmpParent(dir), "*", "demo-1-*", "child"))
	if len(files) != 1 {
		t.Fatalf("the killed daemon's tmpdirs hold %v; want one child file", files)
	}
	b, _ := os.ReadFile(files[0])
	var pid, port int
	if _, err := fmt.Sscanf(string(b), "%d %d", &pid, &port); err != nil || pid != child {
		t.Fatalf("the child's file says %q (%v); want pid %d and its port", b, err, child)
	}
	return dir, pool.InstanceStatus{ID: "demo-1", Pid: pid, Alloc: map[string]int{"cdp": port}, TmpDir: filepath.Dir(files[0])}
}

// TestSurviveKeepsPortsAndTmpdir: a killed daemon's child with an
// allocated port and a ${mcpx.tmpdir} is adopted with both: the same
// child on the same port, its directory kept in the dead daemon's run
// directory (which the sweep leaves), both released when it stops, and
// nothing left after Close; with pool.tmpDir set, and without (the run
// directories are then mcpx-instances-* in os.TempDir()).
func TestSurviveKeepsPortsAndTmpdir(t *testing.T) {
	for _, where := range []string{"pool.tmpDir", "os.TempDir"} {
		t.Run(where, func(t *testing.T) {
			proctest.CheckNoLeaks(t)
			if where == "os.TempDir" {
				sys := t.TempDir() // first: the test's own directories are made in the real one
				t.Setenv("TMPDIR", sys)
				t.Setenv(envSurviveTmp, "system")
			}
			lo, hi := freePorts(t, 2)
			dir, before := killedWithAResChild(t, lo)
			exitLog := filepath.Join(dir, "exit.log")
			p, res := nextDaemon(t, dir, true, resServer(proctest.Marker(t), lo, hi, exitLog))
			if len(res.Adopted) != 1 || len(res.Replaced) != 0 {
				t.Fatalf("adopted %v, replaced %v; want one adopted", res.Adopted, res.Replaced)
			}
			carried(t, p, before, exitLog)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			p.Close(ctx)
			noTmpLeft(t, tmpParent(dir))
		})
	}
}

// TestSurviveReplacesAChangedAllocation: a killed daemon's child whose
// allocation range changed meanwhile is replaced; its port and tmpdir are
// released once it is gone.
func TestSurviveReplacesAChangedAllocation(t *testing.T) {
	proctest.CheckNoLeaks(t)
	lo, _ := freePorts(t, 4)
	dir, before := killedWithAResChild(t, lo)
	exitLog := filepath.Join(dir, "exit.log")
	p, res := nextDaemon(t, dir, true, resServer(proctest.Marker(t), lo+2, lo+3, exitLog))
	replaced(t, p, res, before, exitLog, lo+2, lo+3)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	p.Close(ctx)
	noTmpLeft(t, tmpParent(dir))
}

// TestSweepSparesTheKeptChildrensRuns: the sweep of dead daemons' run
// directories, which a start may run before AdoptSurvivors (a warm
// start), leaves those holding the directories of the children the
// survive file records.
func TestSweepSparesTheKeptChildrensRuns(t *testing.T) {
	dir := realDir(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(dir, "tmp", fmt.Sprintf("run-%d-1", dead.Process.Pid))
	stale := filepath.Join(dir, "tmp", fmt.Sprintf("run-%d-2", dead.Process.Pid))
	for _, d := range []string{filepath.Join(kept, "demo-1-x"), filepath.Join(stale, "demo-2-x"), filepath.Join(dir, "state")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	rec := fmt.Sprintf(`{"children":[{"id":"demo-1","server":"demo","tmpdir":%q}]}`, filepath.Join(kept, "demo-1-x"))
	if err := os.WriteFile(filepath.Join(dir, "state", "survive.json"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	s := demoServer(t, "demo")
	s.Env["TMP"] = "${mcpx.tmpdir}"
	p := newPool(t, surviveOptions(dir, true), s)
	envOf(t, p, "session:a", "TMP")
	if _, err := os.Stat(filepath.Join(kept, "demo-1-x")); err != nil {
		t.Errorf("the kept child's directory was swept: %v", err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the run directory of dead pid %d is still there: %v", dead.Process.Pid, err)
	}
}
