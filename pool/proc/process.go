package proc

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
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// Process is one running child, leader of its own process group: its
// pipes, its stderr (logged and kept as a tail), and its end. Exited is
// closed by the one goroutine that waits for it; everything else selects
// on it. Its methods are safe for concurrent use.
type Process struct {
	cmd   *exec.Cmd
	mark  string // its MarkEnv value, inherited by its descendants
	start uint64 // its start time (Linux clock ticks), to know its pid is still its own
	stdin *os.File
	// stdout and stderrR are our ends of its stdout and stderr pipes;
	// stderrR is owned by the stderr reader (kept to hand it over).
	stdout  *os.File
	stderrR *os.File
	stderr  *ring
	// exited is closed by the one goroutine that waits for the child;
	// waitErr is set before that and read only after.
	exited  chan struct{}
	waitErr error
	// stderrDone is closed when the stderr reader has seen EOF.
	stderrDone chan struct{}
	// ready is closed when a stderr line matches readyRe (Command.Ready);
	// nil when there is none.
	ready   chan struct{}
	readyRe *regexp.Regexp
	// kept: the watchdog holds its pipes too (Keep); exe is its
	// executable then, set before kept.
	kept atomic.Bool
	exe  string
	// cell confines the child (Command.Sandbox, Inherited.Cell); nil for
	// an unconfined one. Constant after start. limit is which of its
	// limits ended the child ("" none), set before exited is closed.
	cell  *sandbox.Cell
	limit string
}

// stderrRingBytes bounds the kept stderr tail per child.
const stderrRingBytes = 64 << 10

// newProcess is the Process of cmd, started or inherited, with our ends of
// its pipes; it starts reading stderr into log (nil = discard).
func newProcess(cmd *exec.Cmd, mark string, start uint64, stdin, stdout, stderr *os.File, log *slog.Logger, suppressed *atomic.Int64, ready *regexp.Regexp) *Process {
	p := &Process{
		cmd: cmd, mark: mark, start: start,
		stdin: stdin, stdout: stdout, stderrR: stderr,
		stderr:     newRing(stderrRingBytes),
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
	}
	if ready != nil {
		p.ready, p.readyRe = make(chan struct{}), ready
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	go p.readStderr(log, suppressed)
	return p
}

func (p *Process) readStderr(log *slog.Logger, suppressed *atomic.Int64) {
	defer close(p.stderrDone)
	defer p.stderrR.Close()
	sc := bufio.NewScanner(p.stderrR)
	sc.Buffer(make([]byte, 0, 4096), 256<<10)
	lim := newLineLimiter(time.Now)
	lim.counter = suppressed
	defer func() { lim.flush(log, time.Now()) }()
	for sc.Scan() {
		line := sc.Bytes()
		p.stderr.Write(line)
		p.stderr.Write([]byte{'\n'})
		lim.log(log, line)
		if p.readyRe != nil && p.readyRe.Match(line) {
			close(p.ready)
			p.readyRe = nil
		}
	}
	// A line longer than the scanner buffer: keep draining so the child
	// never blocks on a full stderr pipe.
	io.Copy(p.stderr, p.stderrR)
}

// Pid, Mark and StartTime name the child: its mark (MarkEnv) is
// inherited by its descendants; its start time (Linux clock ticks, 0
// elsewhere) tells it apart from a process that reused its pid.
func (p *Process) Pid() int          { return p.cmd.Process.Pid }
func (p *Process) Mark() string      { return p.mark }
func (p *Process) StartTime() uint64 { return p.start }

// Stdin and Stdout are our ends of the child's stdin and stdout. Stop
// closes both.
func (p *Process) Stdin() io.WriteCloser { return p.stdin }
func (p *Process) Stdout() io.ReadCloser { return p.stdout }

// Exited is closed once the child has exited and been waited for.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Ready is closed when a line of the child's stderr matches
// Command.Ready; nil when there is no pattern.
func (p *Process) Ready() <-chan struct{} { return p.ready }

// Tail is the last n lines of the child's stderr written so far.
func (p *Process) Tail(n int) string { return p.stderr.Tail(n) }

// FinalTail waits briefly for the stderr reader to finish (the child has
// exited, so EOF is near) and returns the last lines.
func (p *Process) FinalTail() string {
	select {
	case <-p.stderrDone:
	case <-time.After(200 * time.Millisecond):
	}
	return p.stderr.Tail(20)
}

// closeCell releases the child's confinement once it has exited (ps its
// state, nil if not ours to read) and notes which limit ended it.
func (p *Process) closeCell(ps *os.ProcessState) {
	if p.cell == nil {
		return
	}
	p.cell.Close()
	p.limit = p.cell.Limit(ps)
}

// Sandbox is the child's confinement; nil when it is not confined. The
// Process owns it: it is closed when the child has exited.
func (p *Process) Sandbox() *sandbox.Cell { return p.cell }

// Limit says which of its sandbox's limits ended the child ("limit:
// memory 4GiB"), "" if none did. Read it once Exited is closed.
func (p *Process) Limit() string { return p.limit }

// ExitDescription says how the child ended, for errors and status: "exited with
// status 1", "killed by signal killed", "killed by signal killed (limit:
// memory 1GiB)". Read it once Exited is closed.
func (p *Process) ExitDescription() string {
	if p.limit != "" {
		return p.exitDescription() + " (" + p.limit + ")"
	}
	return p.exitDescription()
}

func (p *Process) exitDescription() string {
	var ee *exec.ExitError
	switch {
	case p.waitErr == nil:
		return "exited with status 0"
	case errors.As(p.waitErr, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by signal " + ws.Signal().String()
		}
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	default:
		return p.waitErr.Error()
	}
}

// Kill sends the child SIGKILL, which ends even a stopped process; Stop
// then finds it gone and clears what it left.
func (p *Process) Kill() { p.cmd.Process.Signal(syscall.SIGKILL) }

// Files are the descriptors of our ends of the child's stdin, stdout and
// stderr, to hand over across an exec or to a keeper; ok is false if one
// cannot be read.
func (p *Process) Files() (stdin, stdout, stderr int, ok bool) {
	var ok1, ok2, ok3 bool
	stdin, ok1 = fdOf(p.stdin)
	stdout, ok2 = fdOf(p.stdout)
	stderr, ok3 = fdOf(p.stderrR)
	return stdin, stdout, stderr, ok1 && ok2 && ok3
}

// fdOf is f's descriptor, read without putting it in blocking mode (as
// os.File.Fd would).
func fdOf(f *os.File) (int, bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, false
	}
	fd := -1
	if rc.Control(func(u uintptr) { fd = int(u) }) != nil || fd < 0 {
		return 0, false
	}
	return fd, true
}

// Grace periods of the shutdown sequence (MCP spec, Lifecycle/Shutdown/stdio:
// close stdin, wait, SIGTERM, wait, SIGKILL).
var (
	stdinGrace = 2 * time.Second
	termGrace  = 2 * time.Second
)

// Stop shuts the child down: close stdin, then SIGTERM, then SIGKILL of the
// whole process group, each after a bounded wait. It returns when the leader
// has been reaped and everything else it started has been sent SIGKILL:
// its process group, the rest of its process tree as it was when the stop
// began, and every process carrying its mark (a setsid'd grandchild is in
// none of the others once its parent is gone).
func (p *Process) Stop(ctx context.Context) {
	if p.kept.Load() {
		dropChild(p) // or its stdin would not close
	}
	var tree []procInfo
	select {
	case <-p.exited: // reaped: its pid may name another process by now
	default:
		tree = treeOf(p.Pid(), p.start)
	}
	p.stopLeader(ctx)
	killRest(p.mark, tree)
}

func (p *Process) stopLeader(ctx context.Context) {
	p.stdin.Close()
	defer p.stdout.Close()
	pgid := p.Pid()
	if p.wait(ctx, stdinGrace) {
		// The leader left; make sure nothing it started lingers.
		killGroup(pgid, syscall.SIGKILL)
		return
	}
	killGroup(pgid, syscall.SIGTERM)
	if p.wait(ctx, termGrace) {
		killGroup(pgid, syscall.SIGKILL)
		return
	}
	killGroup(pgid, syscall.SIGKILL)
	<-p.exited
}

// wait reports whether the child exited within d (or before ctx ended).
func (p *Process) wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	select {
	case <-p.exited:
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

// Inherited is a child this process did not start: handed over across an
// exec of the daemon, or kept by a killed daemon's keeper (TakeSurvivor).
type Inherited struct {
	Pid   int
	Start uint64 // its start time, so a reused pid is not taken for it
	Mark  string
	// Stdin, Stdout and Stderr are the descriptors of our ends of its
	// pipes; Adopt owns them.
	Stdin, Stdout, Stderr int
	// Proxy, if not 0, is the descriptor of its egress proxy's listener
	// (on the child's own loopback), kept open across the exec or by the
	// keeper; Adopt does not own it: sandbox.Resume's Cell does.
	Proxy int
	// Cell is its confinement, resumed (sandbox.Resume) from what the
	// earlier daemon handed over; nil for an unconfined child. The
	// Process owns it.
	Cell *sandbox.Cell
	// Ours: it is still this process's child (handed over across an
	// exec), its exit waited for by pid; else (a survivor re-parented
	// elsewhere) it is watched for in /proc, its status unknown.
	Ours bool
}

// Files are h's descriptors: its pipes, and its proxy listener if any.
func (h Inherited) Files() []int {
	fds := []int{h.Stdin, h.Stdout, h.Stderr}
	if h.Proxy != 0 {
		fds = append(fds, h.Proxy)
	}
	return fds
}

// Adopt is the Process of h: its pipes from their descriptors, its stderr
// read again into log (as Command.Log, but log names the pid itself;
// suppressed as Command.Suppressed), its exit waited or watched for.
func Adopt(h Inherited, log *slog.Logger, suppressed *atomic.Int64) *Process {
	for _, fd := range h.Files() {
		// Close-on-exec again: a child that is not handed over at the
		// next exec must not have its pipes leak into the next image.
		syscall.CloseOnExec(fd)
	}
	proc, _ := os.FindProcess(h.Pid) // never fails on unix
	p := newProcess(&exec.Cmd{Process: proc}, h.Mark, h.Start, os.NewFile(uintptr(h.Stdin), "stdin"),
		os.NewFile(uintptr(h.Stdout), "stdout"), os.NewFile(uintptr(h.Stderr), "stderr"), log, suppressed, nil)
	p.cell = h.Cell
	go func() {
		var state *os.ProcessState
		defer close(p.exited)
		defer func() { p.closeCell(state) }()
		defer forget(h.Pid)
		if procStart(h.Pid) != h.Start {
			p.waitErr = fmt.Errorf("the handed-over child (pid %d) was gone", h.Pid)
			return
		}
		if !h.Ours {
			p.waitErr = waitNotOurs(h.Pid, h.Start)
			return
		}
		ps, err := proc.Wait()
		state = ps
		switch {
		case err != nil:
			p.waitErr = err
		case !ps.Success():
			p.waitErr = &exec.ExitError{ProcessState: ps}
		}
	}()
	return p
}

// ProxyFD is the descriptor of the child's egress proxy listener, for a
// confined child with one (sandbox.NetworkProxy), to hand over.
func (p *Process) ProxyFD() (int, bool) {
	if p.cell == nil {
		return 0, false
	}
	l, ok := p.cell.Listener().(interface {
		SyscallConn() (syscall.RawConn, error)
	})
	if !ok || l == nil {
		return 0, false
	}
	rc, err := l.SyscallConn()
	if err != nil {
		return 0, false
	}
	fd := -1
	if rc.Control(func(u uintptr) { fd = int(u) }) != nil || fd <= 0 {
		return 0, false
	}
	return fd, true
}

// Kept reports whether the watchdog holds p's pipes (Keep).
func (p *Process) Kept() bool { return p.kept.Load() }

// Exe is the executable p ran when it was kept (Keep); "" if it was not.
func (p *Process) Exe() string {
	if !p.Kept() {
		return ""
	}
	return p.exe
}

// Exe is the executable pid runs, "" if it cannot be read (elsewhere than
// Linux, always).
func Exe(pid int) string {
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return ""
	}
	return exe
}
