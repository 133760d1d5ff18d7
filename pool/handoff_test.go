package pool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/pool"
	"mcpx.dev/mcpx/pool/proc"
)

// The per-instance server the carry-over tests (upgrade and survive) run.
const (
	// envResChild=1 makes this test binary resChild.
	envResChild = "MCPX_TEST_RES_CHILD"
	// envExitLog names the file resChild appends its exit to.
	envExitLog = "MCPX_TEST_EXIT_LOG"
	// envResRange is the stand-in daemons' allocation range, "lo-hi".
	envResRange = "MCPX_TEST_RES_RANGE"
)

// maybeResChild runs resChild if this process was started as one.
func maybeResChild() {
	if os.Getenv(envResChild) == "1" {
		os.Exit(resChild())
	}
}

// resChild is the child of resServer, a stand-in for a browser server: it
// listens on its allocated port $PORT, writes "<pid> <port>" to the file
// child in its ${mcpx.tmpdir} $TMP, serves the demo on stdio and, at the
// end of its stdin, appends "<pid> kept" to $MCPX_TEST_EXIT_LOG if that
// file is still there ("<pid> gone" if not).
func resChild() int {
	port, file := os.Getenv("PORT"), filepath.Join(os.Getenv("TMP"), "child")
	ln, err := net.Listen("tcp4", "127.0.0.1:"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if err := os.WriteFile(file, fmt.Appendf(nil, "%d %s", os.Getpid(), port), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := demo.Main(context.Background(), os.Stdin, os.Stdout, os.Stderr, true)
	state := "gone"
	if _, err := os.Stat(file); err == nil {
		state = "kept"
	}
	if f, err := os.OpenFile(os.Getenv(envExitLog), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
		fmt.Fprintf(f, "%d %s\n", os.Getpid(), state)
		f.Close()
	}
	return code
}

// resServer is the demo server as resChild, with the port cdp from [lo,
// hi] and a ${mcpx.tmpdir}; it logs its exits to exitLog.
func resServer(marker string, lo, hi int, exitLog string) pool.Server {
	s := surviveDef(marker, envResChild, "1", "PORT", "${mcpx.alloc.cdp}", "TMP", "${mcpx.tmpdir}", envExitLog, exitLog)
	s.Allocate = map[string]pool.Alloc{"cdp": {Range: [2]int{lo, hi}}}
	return s
}

// resRange is envResRange's range.
func resRange() (lo, hi int) {
	l, h, _ := strings.Cut(os.Getenv(envResRange), "-")
	lo, _ = strconv.Atoi(l)
	hi, _ = strconv.Atoi(h)
	return lo, hi
}

// carried checks what an adopted per-instance instance kept from before,
// the status its predecessor gave it: the same child (pid, memory: the
// demo's counter goes on from 2), port (still the child's, still held
// here: a second instance gets another) and tmpdir (its file still there,
// even after the sweep the second instance's start runs); then that
// stopping it releases the port and removes the tmpdir, with the
// predecessor's run directory once empty, but only once the child is
// gone (its exit log).
func carried(t *testing.T, p *pool.Pool, before pool.InstanceStatus, exitLog string) {
	t.Helper()
	after := statusOf(t, p, "global")
	port := before.Alloc["cdp"]
	if after.ID != before.ID || after.Pid != before.Pid || after.Alloc["cdp"] != port || after.TmpDir != before.TmpDir || port == 0 || after.TmpDir == "" {
		t.Fatalf("adopted instance %+v; want %s, pid %d, port %d, tmpdir %q", after, before.ID, before.Pid, port, before.TmpDir)
	}
	if !slices.Contains(p.TakenPorts(), port) {
		t.Errorf("the allocator holds %v, not the adopted port %d", p.TakenPorts(), port)
	}
	if c, err := net.DialTimeout("tcp4", "127.0.0.1:"+strconv.Itoa(port), 5*time.Second); err != nil {
		t.Errorf("the adopted child does not listen on its port: %v", err)
	} else {
		c.Close()
	}
	file := filepath.Join(after.TmpDir, "child")
	if b, err := os.ReadFile(file); err != nil || string(b) != fmt.Sprintf("%d %d", after.Pid, port) {
		t.Errorf("the child's file in its tmpdir: %q, %v", b, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if got, err := call(ctx, p, pool.Target{Server: "demo", Key: "global"}, "counter", nil); err != nil || got != "3" {
		t.Errorf("counter after the adoption: %q, %v; want 3 (the same child)", got, err)
	}
	if other := portOf(t, p, "session:b"); other == port {
		t.Errorf("a second instance got the adopted instance's port %d", port)
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("the adopted tmpdir went when a second instance started: %v", err)
	}
	if err := p.Stop(ctx, after.ID); err != nil {
		t.Fatal(err)
	}
	waitGone(t, after.Pid) // a killed daemon's child is not ours: init reaps it
	if slices.Contains(p.TakenPorts(), port) {
		t.Errorf("port %d still held after its instance stopped: %v", port, p.TakenPorts())
	}
	for _, dir := range []string{after.TmpDir, filepath.Dir(after.TmpDir)} {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there after its instance stopped: %v", dir, err)
		}
	}
	if got := exitOf(t, exitLog, after.Pid); got != "kept" {
		t.Errorf("the adopted child's exit: %q; want kept (it ended at its stdin's end, its tmpdir still there)", got)
	}
}

// replaced checks that the predecessor's child before described, whose
// definition changed (its range is now [lo, hi]), was replaced: stopped,
// its port and tmpdir released once it was gone, and the next call starts
// a child of the new definition.
func replaced(t *testing.T, p *pool.Pool, res pool.Adopted, before pool.InstanceStatus, exitLog string, lo, hi int) {
	t.Helper()
	if len(res.Adopted) != 0 || len(res.Replaced) != 1 {
		t.Fatalf("adopted %v, replaced %v; want one replaced", res.Adopted, res.Replaced)
	}
	waitGone(t, before.Pid)
	port := before.Alloc["cdp"]
	testenv.WaitFor(t, "the replaced child's port to be released", func() bool { return !slices.Contains(p.TakenPorts(), port) })
	for _, dir := range []string{before.TmpDir, filepath.Dir(before.TmpDir)} {
		testenv.WaitFor(t, dir+" to be removed", func() bool {
			_, err := os.Stat(dir)
			return errors.Is(err, os.ErrNotExist)
		})
	}
	if got := exitOf(t, exitLog, before.Pid); got != "kept" {
		t.Errorf("the replaced child's exit: %q; want kept (it ended at its stdin's end, its tmpdir still there)", got)
	}
	if got := portOf(t, p, "global"); got < lo || got > hi {
		t.Errorf("the new child got port %d; want one of the new range [%d, %d]", got, lo, hi)
	}
	if st := statusOf(t, p, "global"); st.Pid == before.Pid || st.TmpDir == before.TmpDir {
		t.Errorf("the new instance %+v has the replaced one's pid or tmpdir", st)
	}
}

// exitOf is what pid's line in exitLog says ("" if none).
func exitOf(t *testing.T, exitLog string, pid int) string {
	t.Helper()
	b, _ := os.ReadFile(exitLog)
	for line := range strings.Lines(string(b)) {
		if p, state, ok := strings.Cut(strings.TrimSpace(line), " "); ok && p == strconv.Itoa(pid) {
			return state
		}
	}
	return ""
}

// noTmpLeft checks that nothing is left in tmp, where the pools made
// their run directories.
func noTmpLeft(t *testing.T, tmp string) {
	t.Helper()
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("%d entries left in %s, want none: %v", len(ents), tmp, ents)
	}
}

// The upgrade tests run in two processes: the test starts upgradingDaemon,
// whose pool has one resServer child; it upgrades in place (Handoff,
// execve) into this test binary running the same test in the new image
// (envUpgraded set), which Adopts the child and checks it, then closes its
// pool. The test then checks that nothing is left.
const (
	envUpgradeDir    = "MCPX_TEST_UPGRADE_DIR"    // the state directory's parent
	envUpgradeTest   = "MCPX_TEST_UPGRADE_TEST"   // the test the new image runs
	envUpgraded      = "MCPX_TEST_UPGRADED"       // the handoff state file, in the new image
	envUpgradeBefore = "MCPX_TEST_UPGRADE_BEFORE" // the child's status before the upgrade, in JSON
	envUpgradeBusy   = "MCPX_TEST_UPGRADE_BUSY"   // "1": the child is mid-call at the upgrade
)

func upgradeOptions(dir string) pool.Options {
	return pool.Options{TmpDir: filepath.Join(dir, "tmp"), ReapInterval: -1, ExecWatch: -1, Egress: standInEgress()}
}

// upgradeDef is resServer as the upgrade tests run it, in the range of
// envResRange, or in the two ports past it when changed.
func upgradeDef(changed bool) pool.Server {
	if url := os.Getenv(envRemoteURL); url != "" {
		return remoteDef(url, changed)
	}
	if os.Getenv(envConfined) != "" {
		return confinedDef(os.Getenv(proctest.MarkerEnv))
	}
	lo, hi := upgradeRange(changed)
	return resServer(os.Getenv(proctest.MarkerEnv), lo, hi, filepath.Join(os.Getenv(envUpgradeDir), "exit.log"))
}

func upgradeRange(changed bool) (lo, hi int) {
	lo, hi = resRange()
	if changed {
		return hi + 1, hi + 2
	}
	return lo, hi
}

// upgradingDaemon is a stand-in daemon: Supervise, a pool whose one
// resServer child has counted to 2, then an upgrade in place into this
// test binary running envUpgradeTest. It prints the child's status first.
// With envUpgradeBusy the child is mid-call then: it is not handed over.
func upgradingDaemon() {
	dir := os.Getenv(envUpgradeDir)
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if _, err := proc.Supervise(filepath.Join(dir, "state"), nil); err != nil {
		fail(err)
	}
	p := pool.New(upgradeOptions(dir))
	p.SetServers([]pool.Server{upgradeDef(false)})
	for range 2 {
		if _, err := call(context.Background(), p, standInTarget(), "counter", nil); err != nil {
			fail(err)
		}
	}
	if os.Getenv(envUpgradeBusy) == "1" {
		go call(context.Background(), p, standInTarget(), "sleep", map[string]int{"ms": 60000})
		for p.Instances()[0].InFlight == 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	before, _ := json.Marshal(p.Instances()[0])
	fmt.Printf("%s\n", before)
	fail(p.Handoff(func(st pool.HandoffState) error {
		for _, c := range st.Children {
			for _, fd := range c.Files() {
				if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
					return err
				}
			}
		}
		path := filepath.Join(dir, "handoff.json")
		b, _ := json.Marshal(st)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return err
		}
		env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, envPoolDaemon+"=") })
		env = append(env, envUpgraded+"="+path, envUpgradeBefore+"="+string(before))
		args := []string{os.Args[0], "-test.run=^" + os.Getenv(envUpgradeTest) + "$", "-test.v", "-test.count=1"}
		return syscall.Exec("/proc/self/exe", args, env)
	}))
}

// upgradeWithAChild runs t's upgrade: upgradingDaemon, then t in the new
// image. It returns the state directory's parent and the child's status
// before the upgrade, once the new image has exited and t passed there.
func upgradeWithAChild(t *testing.T, env ...string) (string, pool.InstanceStatus) {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "state"), 0o700); err != nil {
		t.Fatal(err)
	}
	lo, _ := freePorts(t, 4)
	d := exec.Command(os.Args[0], "-test.run=^$")
	d.Env = append(os.Environ(), envPoolDaemon+"=upgrade", envUpgradeDir+"="+dir, fmt.Sprintf("%s=%d-%d", envResRange, lo, lo+1),
		envUpgradeTest+"="+t.Name(), proctest.Env(t))
	d.Env = append(d.Env, env...)
	var stdout, stderr bytes.Buffer
	d.Stdout, d.Stderr = &stdout, &stderr
	err := d.Run()
	first, rest, _ := strings.Cut(stdout.String(), "\n")
	var before pool.InstanceStatus
	if jerr := json.Unmarshal([]byte(first), &before); err != nil || jerr != nil || !strings.Contains(rest, "--- PASS: "+t.Name()) {
		t.Fatalf("the upgraded daemon: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("the new image:\n%s", rest)
	return dir, before
}

// upgraded is the new image's side of t's upgrade: it takes the handoff
// state over, as the daemon does, with def's server (changed or not), and
// returns the pool, what Adopt did and the child's status before.
func upgraded(t *testing.T, changed bool) (*pool.Pool, pool.Adopted, pool.InstanceStatus) {
	t.Helper()
	var st pool.HandoffState
	var before pool.InstanceStatus
	b, err := os.ReadFile(os.Getenv(envUpgraded))
	if err == nil {
		err = errors.Join(json.Unmarshal(b, &st), json.Unmarshal([]byte(os.Getenv(envUpgradeBefore)), &before))
	}
	if err != nil {
		t.Fatal(err)
	}
	pool.ClaimHandoff(st)
	dir := os.Getenv(envUpgradeDir)
	sup, err := proc.Supervise(filepath.Join(dir, "state"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := pool.New(upgradeOptions(dir))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		p.Close(ctx)
		sup.Close()
	})
	p.SetServers([]pool.Server{upgradeDef(changed)})
	return p, p.Adopt(st), before
}

// TestUpgradeKeepsPortsAndTmpdir: an upgrade in place hands over an
// instance with an allocated port and a ${mcpx.tmpdir}: the new image has
// the same child, on the same port, with the same directory, and releases
// them when it stops; nothing of either image's is left after Close.
func TestUpgradeKeepsPortsAndTmpdir(t *testing.T) {
	if os.Getenv(envUpgraded) != "" {
		proctest.CheckNoLeaks(t)
		p, res, before := upgraded(t, false)
		if len(res.Adopted) != 1 || len(res.Replaced) != 0 {
			t.Fatalf("adopted %v, replaced %v; want one adopted", res.Adopted, res.Replaced)
		}
		carried(t, p, before, filepath.Join(os.Getenv(envUpgradeDir), "exit.log"))
		return
	}
	proctest.CheckNoLeaks(t)
	dir, before := upgradeWithAChild(t)
	waitGone(t, before.Pid)
	noTmpLeft(t, filepath.Join(dir, "tmp"))
}

// TestUpgradeReplacesAChangedAllocation: an instance whose allocation
// range changed across the upgrade is replaced, and its port and tmpdir
// are released once its child is gone.
func TestUpgradeReplacesAChangedAllocation(t *testing.T) {
	if os.Getenv(envUpgraded) != "" {
		proctest.CheckNoLeaks(t)
		p, res, before := upgraded(t, true)
		lo, hi := upgradeRange(true)
		replaced(t, p, res, before, filepath.Join(os.Getenv(envUpgradeDir), "exit.log"), lo, hi)
		return
	}
	proctest.CheckNoLeaks(t)
	dir, before := upgradeWithAChild(t)
	waitGone(t, before.Pid)
	noTmpLeft(t, filepath.Join(dir, "tmp"))
}

// TestUpgradeRemovesTheRunDirOfChildrenNotHandedOver: a child busy at the
// upgrade is killed, not handed over; its tmpdir, in the old image's run
// directory, is removed with it at the new image's Close.
func TestUpgradeRemovesTheRunDirOfChildrenNotHandedOver(t *testing.T) {
	if os.Getenv(envUpgraded) != "" {
		proctest.CheckNoLeaks(t)
		p, res, before := upgraded(t, false)
		if len(res.Adopted)+len(res.Replaced) != 0 {
			t.Fatalf("adopted %v, replaced %v; want nothing (the child was busy)", res.Adopted, res.Replaced)
		}
		waitGone(t, before.Pid)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		p.Close(ctx)
		if run := filepath.Dir(before.TmpDir); before.TmpDir == "" || !strings.HasPrefix(filepath.Base(run), "run-") {
			t.Errorf("the busy child's tmpdir %q is not in a run directory", before.TmpDir)
		} else if _, err := os.Stat(run); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the old image's run directory %s is left after Close: %v", run, err)
		}
		return
	}
	proctest.CheckNoLeaks(t)
	dir, before := upgradeWithAChild(t, envUpgradeBusy+"=1")
	waitGone(t, before.Pid)
	noTmpLeft(t, filepath.Join(dir, "tmp"))
}
