package pool

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// child is one running stdio server process, leader of its own process group.
type child struct {
	cmd    *exec.Cmd
	mark   string // its MarkEnv value, inherited by its descendants
	start  uint64 // its start time (Linux clock ticks), to know its pid is still its own
	stdin  io.WriteCloser
	stdout io.ReadCloser
	// stderrR is our end of its stderr pipe, owned by the stderr reader
	// (kept to hand it over across an exec: see Pool.Handoff).
	stderrR *os.File
	stderr  *ring
	// exited is closed by the one goroutine that calls cmd.Wait; waitErr is
	// set before that and read only after.
	exited  chan struct{}
	waitErr error
	// stderrDone is closed when the stderr reader has seen EOF.
	stderrDone chan struct{}
	// ready is closed when a stderr line matches readyRe (Server.ReadyStderr);
	// nil when there is none.
	ready   chan struct{}
	readyRe *regexp.Regexp
	// kept: the watchdog holds its pipes too (Options.Survive); exe is
	// its executable then.
	kept atomic.Bool
	exe  string
}

// stderrRingBytes bounds the kept stderr tail per instance.
const stderrRingBytes = 64 << 10

// startChild starts sp as a process in its own process group. Stdout and
// stderr are our own os.Pipes, not cmd's, so reading them never races with
// cmd.Wait. Stderr lines are logged with log (server/key/pid attached), up
// to a rate (stderrlimit.go), and all kept in a ring for the tail.
func startChild(sp spawnSpec, baseEnv []string, spawner *spawner, log *slog.Logger, suppressed *atomic.Int64) (*child, error) {
	mark := newMark()
	env := childEnv(baseEnv, sp.inheritAll, sp.inherit, sp.devEnv, sp.env, MarkEnv+"="+mark)
	name := sp.command
	if len(sp.devEnv) > 0 && !strings.Contains(name, "/") {
		// A command the execution environment provides is looked up
		// in the child's PATH, not the daemon's.
		if path, _ := lookupEnv(env, "PATH"); lookPathIn(name, path) != "" {
			name = lookPathIn(name, path)
		}
	}
	cmd := exec.Command(name, sp.args...)
	if sp.path != "" {
		// Found on the child's own PATH (execid), not the daemon's.
		cmd.Path, cmd.Err = sp.path, nil
	}
	cmd.Dir = sp.cwd
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		closeAll(stdinR, stdinW)
		return nil, err
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		closeAll(stdinR, stdinW, stdoutR, stdoutW)
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
	if err := spawner.start(cmd); err != nil {
		closeAll(stdinR, stdinW, stdoutR, stdoutW, stderrR, stderrW)
		return nil, err
	}
	// The child holds its own copies now.
	closeAll(stdinR, stdoutW, stderrW)
	c := &child{
		cmd:        cmd,
		mark:       mark,
		start:      procStart(cmd.Process.Pid),
		stdin:      stdinW,
		stdout:     stdoutR,
		stderrR:    stderrR,
		stderr:     newRing(stderrRingBytes),
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
	}
	if sp.ready != nil {
		c.ready, c.readyRe = make(chan struct{}), sp.ready
	}
	log = log.With("pid", cmd.Process.Pid)
	go c.readStderr(stderrR, log, suppressed)
	go func() {
		c.waitErr = cmd.Wait()
		forget(cmd.Process.Pid)
		close(c.exited)
	}()
	return c, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

func (c *child) readStderr(r *os.File, log *slog.Logger, suppressed *atomic.Int64) {
	defer close(c.stderrDone)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 256<<10)
	lim := newLineLimiter(time.Now)
	lim.counter = suppressed
	defer func() { lim.flush(log, time.Now()) }()
	for sc.Scan() {
		line := sc.Bytes()
		c.stderr.Write(line)
		c.stderr.Write([]byte{'\n'})
		lim.log(log, line)
		if c.readyRe != nil && c.readyRe.Match(line) {
			close(c.ready)
			c.readyRe = nil
		}
	}
	// A line longer than the scanner buffer: keep draining so the child
	// never blocks on a full stderr pipe.
	io.Copy(c.stderr, r)
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// exitDescription says how the child ended, for errors and status.
func (c *child) exitDescription() string {
	var ee *exec.ExitError
	switch {
	case c.waitErr == nil:
		return "exited with status 0"
	case errors.As(c.waitErr, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by signal " + ws.Signal().String()
		}
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	default:
		return c.waitErr.Error()
	}
}

// stderrTail waits briefly for the stderr reader to finish (the child has
// exited, so EOF is near) and returns the last lines.
func (c *child) stderrTail() string {
	select {
	case <-c.stderrDone:
	case <-time.After(200 * time.Millisecond):
	}
	return c.stderr.Tail(20)
}

// Grace periods of the shutdown sequence (MCP spec, Lifecycle/Shutdown/stdio:
// close stdin, wait, SIGTERM, wait, SIGKILL).
var (
	stdinGrace = 2 * time.Second
	termGrace  = 2 * time.Second
)

// stop shuts the child down: close stdin, then SIGTERM, then SIGKILL of the
// whole process group, each after a bounded wait. It returns when the leader
// has been reaped and everything else it started has been sent SIGKILL:
// its process group, the rest of its process tree as it was when the stop
// began, and every process carrying its mark (a setsid'd grandchild is in
// none of the others once its parent is gone).
func (c *child) stop(ctx context.Context) {
	if c.kept.Load() {
		dropChild(c) // or its stdin would not close
	}
	var tree []procInfo
	select {
	case <-c.exited: // reaped: its pid may name another process by now
	default:
		tree = treeOf(c.pid(), c.start)
	}
	c.stopLeader(ctx)
	killRest(c.mark, tree)
}

func (c *child) stopLeader(ctx context.Context) {
	c.stdin.Close()
	defer c.stdout.Close()
	pgid := c.cmd.Process.Pid
	if c.wait(ctx, stdinGrace) {
		// The leader left; make sure nothing it started lingers.
		killGroup(pgid, syscall.SIGKILL)
		return
	}
	killGroup(pgid, syscall.SIGTERM)
	if c.wait(ctx, termGrace) {
		killGroup(pgid, syscall.SIGKILL)
		return
	}
	killGroup(pgid, syscall.SIGKILL)
	<-c.exited
}

// wait reports whether the child exited within d (or before ctx ended).
func (c *child) wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	select {
	case <-c.exited:
		return true
	default:
		return false
	}
}

func killGroup(pgid int, sig syscall.Signal) {
	if pgid > 0 {
		syscall.Kill(-pgid, sig) // ESRCH when the group is already empty
	}
}
