package proc

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// The watchdog: one process per daemon that outlives it just long enough
// to kill what its children started. Children die with the daemon (their
// parent-death signal), but what they started in sessions of their own
// (`setsid`) would live on, re-parented to init, until the next daemon of
// the same state directory killed them by their mark. The watchdog waits
// on a pipe whose write end only the daemon holds; the kernel closes it
// when the daemon dies, however it dies, and the watchdog then kills every
// process carrying a mark of that daemon (the same look as a new daemon's
// killLeftovers), and exits.
//
// One process per daemon, not one per child: no spawn pays anything, and
// the pool stays the parent of its children (their pids, process groups,
// stdio and exit statuses are what they were). What it cannot catch is
// what a per-child subreaper would: a descendant that cleared its
// environment, and with it its mark.

// envWatchdog makes MaybeWatch run the watchdog of the state directory
// whose id it holds.
const envWatchdog = "MCPX_WATCHDOG"

// envKeeperDir names the state directory to the watchdog (the keeper's
// socket's: keeper_linux.go).
const envKeeperDir = "MCPX_WATCHDOG_DIR"

// watchHook is set by MaybeWatch: only a binary that calls it can be
// re-executed as the watchdog (a test binary that does not would run its
// tests instead).
var watchHook atomic.Bool

// MaybeWatch runs the watchdog and exits if this process was started as
// one (see Supervise); otherwise it returns at once. A binary whose
// daemon calls Supervise should call it first thing in main (and a test
// binary in TestMain): without it Supervise starts no watchdog.
func MaybeWatch() {
	watchHook.Store(true)
	state := os.Getenv(envWatchdog)
	if state == "" {
		return
	}
	os.Exit(watch(state, os.Getenv(envKeeperDir)))
}

// watchRounds bounds how often the watchdog looks again for marked
// processes: one may fork while it is killing the others.
const watchRounds = 50

// watch waits for EOF on its stdin, the daemon's socket (holding the
// pipes of the children the daemon gives it meanwhile: keeper_linux.go),
// then kills the marked processes of state whose daemon is gone, looking
// again until a look finds none. The children it holds for a daemon that
// died are spared and handed to the next daemon of dir, if one comes.
func watch(state, dir string) int {
	daemon := fmt.Sprintf("%d-%d", os.Getppid(), procStart(os.Getppid()))
	l := inheritedKeeper(dir)
	if l != nil {
		defer l.Close()
	}
	hs, bye := keep(0)
	if hs == nil {
		io.Copy(io.Discard, os.Stdin) // not a socket: a pipe's EOF
	}
	// The kernel closes a dying process's files before it is gone from
	// the process table: give it a moment, or a killed daemon is taken
	// for one alive (a stop or an upgrade's exec, which said so).
	for range 200 {
		if bye || !daemonAlive(daemon) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	spare := map[string]bool{}
	for mark, h := range hs {
		if _, daemon, _ := parseMark(mark); daemonAlive(daemon) {
			h.close() // an upgrade's exec: the daemon holds them itself
			delete(hs, mark)
			continue
		}
		spare[mark] = true
	}
	log := slog.New(slog.DiscardHandler)
	killAll := func(spare map[string]bool) {
		for range watchRounds {
			if killLeftovers(state, log, spare) == 0 {
				break
			}
			time.Sleep(10 * time.Millisecond) // let the killed go before looking again
		}
	}
	killAll(spare)
	if len(hs) > 0 && !handOver(l, hs) {
		killAll(nil) // no daemon came for them
	}
	for _, h := range hs {
		h.close()
	}
	return 0
}

// watchdogUp is set while a watchdog runs (startWatchdog): children are
// then started without a parent-death signal.
var watchdogUp atomic.Bool

// Watched reports whether a watchdog runs: only then can children outlive
// an exec of the daemon (they are started without a parent-death signal,
// which the kernel sends when the thread that forked them exits, and
// execve ends every thread but its caller; the watchdog kills them by
// their mark when the daemon dies, and sees the same daemon alive across
// an exec).
func Watched() bool { return watchdogUp.Load() }

// startWatchdog starts this binary as the watchdog of state, if it can be
// (on Linux, MaybeWatch was called, its executable is known). It returns the
// function that tells the watchdog the daemon is done (it then finds
// nothing of a live daemon to kill, and exits) and waits for it.
func startWatchdog(state, dir string, log *slog.Logger) (stop func()) {
	if !watchHook.Load() || runtime.GOOS != "linux" { // elsewhere it could find no mark
		return func() {}
	}
	none := func(err error) func() {
		log.Warn("no watchdog: grandchildren outlive a killed daemon until the next one starts", "err", err)
		return func() {}
	}
	exe, err := os.Executable()
	if err != nil {
		return none(err)
	}
	r, err := keeperPair()
	if err != nil {
		return none(err)
	}
	cmd := exec.Command(exe)
	// The name it was started by: a binary that dispatches on it (a test
	// binary standing in for mcpx) must reach the main that calls
	// MaybeWatch again.
	cmd.Args = []string{os.Args[0]}
	cmd.Env = watchdogEnv(state)
	cmd.Stdin = r
	// The keeper's socket (keeper_linux.go), made here so that it is
	// there before the first child: the watchdog takes a while to start.
	if lf := keeperListener(dir); lf != nil {
		defer lf.Close()
		cmd.ExtraFiles = []*os.File{lf}
		cmd.Env = append(cmd.Env, envKeeperDir+"="+dir)
	}
	// Its own group: a Ctrl-C at the daemon's terminal must not take the
	// watchdog first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = startDirect(cmd)
	r.Close()
	if err != nil {
		closeKeeper()
		return none(err)
	}
	watchdogUp.Store(true)
	return func() {
		watchdogUp.Store(false)
		Bye()
		closeKeeper()
		cmd.Wait()
		forget(cmd.Process.Pid)
		removeKeeperSock(dir)
	}
}

// watchdogEnv is this process's environment, unmarked, naming state.
func watchdogEnv(state string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, MarkEnv+"=") && !strings.HasPrefix(kv, envWatchdog+"=") && !strings.HasPrefix(kv, envKeeperDir+"=") {
			env = append(env, kv)
		}
	}
	return append(env, envWatchdog+"="+state)
}
