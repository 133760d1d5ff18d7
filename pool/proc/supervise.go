package proc

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// MarkEnv is the variable that marks every process started for a child:
// MCPX_INSTANCE=<state>/<daemon>/<child>, where <state> names
// the daemon's state directory (a hash of its path), <daemon> is the
// daemon's pid and start time, and <child> numbers the children it
// started. Descendants inherit it, so when a child is stopped every
// process carrying its mark is killed too, wherever it went (a setsid'd
// grandchild left the process group long ago), and a daemon starting on
// the same state directory kills what a killed predecessor left behind.
// A descendant that clears its environment escapes the mark; it is still
// killed if it was in the child's process tree when the child was stopped.
const MarkEnv = "MCPX_INSTANCE"

// marks is the process-wide state of the marks.
var marks struct {
	mu    sync.Mutex
	state string // the state directory's id; "-" until Supervise
	self  string // this process: "<pid>-<start time>"
	seq   atomic.Int64
}

func init() {
	marks.state = "-"
	marks.self = fmt.Sprintf("%d-%d", os.Getpid(), selfStart())
}

// NewMark returns the mark of a new child: Spawner.Start's, or that of
// the processes something in this process starts on a child's behalf
// (with KillMarked to end them).
func NewMark() string {
	marks.mu.Lock()
	state := marks.state
	marks.mu.Unlock()
	return fmt.Sprintf("%s/%s/%d", state, marks.self, marks.seq.Add(1))
}

// MarkSeq is the last child number used in marks: a successor across an
// exec goes on from it (ContinueMarks), so no two children share a mark.
func MarkSeq() int64 { return marks.seq.Load() }

// ContinueMarks goes on numbering marks after n, a predecessor's MarkSeq.
func ContinueMarks(n int64) {
	if n > marks.seq.Load() {
		marks.seq.Store(n)
	}
}

// stateID names a state directory in marks: a short hash of its canonical
// path, so the mark neither leaks the path nor grows with it.
func stateID(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	sum := sha256.Sum256([]byte(dir))
	return hex.EncodeToString(sum[:8])
}

// parseMark splits a mark into its state id and daemon.
func parseMark(m string) (state, daemon string, ok bool) {
	state, rest, ok1 := strings.Cut(m, "/")
	daemon, _, ok2 := strings.Cut(rest, "/")
	return state, daemon, ok1 && ok2 && state != "" && daemon != ""
}

// Supervisor is what Supervise set up; Close undoes it.
type Supervisor struct {
	log  *slog.Logger
	stop func() // stops the orphan reaper and the subreaper role
	once sync.Once
}

var supervising atomic.Bool

// Supervise makes this process the keeper of its children's descendants,
// for a daemon whose state directory is stateDir. Call it once at start,
// before the first child is started:
//
//   - children's marks name stateDir (see MarkEnv);
//   - processes marked by an earlier daemon of the same state directory
//     that is gone (killed without cleaning up) are killed now;
//   - when the binary called MaybeWatch, a watchdog process is started
//     that outlives the daemon just long enough to kill every process
//     carrying its marks: a daemon killed by SIGKILL leaves nothing its
//     children started behind, without waiting for the next daemon;
//   - on Linux the process becomes a child subreaper
//     (prctl PR_SET_CHILD_SUBREAPER): a grandchild orphaned by its parent
//     is re-parented to the daemon, not to init, and the daemon reaps it
//     when it exits. Elsewhere there is no subreaper and no /proc: marks
//     are set but nothing is killed by them, and only the process group
//     of a child is stopped with it.
//
// The reaper reaps only zombies that no exec.Cmd waits for: a Spawner
// registers each child it starts (under the lock the reaper holds while
// it looks), and the reaper leaves alone any child in this process's own
// process group, where a plain exec.Command elsewhere in the process puts
// its children.
//
// Problems are logged, not returned: a daemon runs without a subreaper
// rather than not at all. Only one Supervisor may be active at a time.
func Supervise(stateDir string, log *slog.Logger) (*Supervisor, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !supervising.CompareAndSwap(false, true) {
		return nil, errors.New("another Supervisor is active in this process")
	}
	id := stateID(stateDir)
	marks.mu.Lock()
	marks.state = id
	marks.mu.Unlock()
	s := &Supervisor{log: log}
	// The children a killed daemon's keeper kept are spared, for
	// TakeSurvivor.
	if n := killLeftovers(id, log, reclaim(stateDir, log)); n > 0 {
		log.Warn("killed processes left by an earlier daemon of this state directory", "count", n, "state", stateDir)
	}
	stopReaper := startSubreaper(log)
	stopWatchdog := startWatchdog(id, stateDir, log)
	s.stop = func() { KillSurvivors(log); stopWatchdog(); stopReaper() }
	return s, nil
}

// Close stops reaping orphans and gives up the subreaper role, and kills
// the survivors no one took (TakeSurvivor). The children's owners (the
// pools) should be closed first.
func (s *Supervisor) Close() {
	s.once.Do(func() {
		s.stop()
		marks.mu.Lock()
		marks.state = "-"
		marks.mu.Unlock()
		supervising.Store(false)
	})
}

// direct is every child this process started through a spawner and has
// not yet waited for: the orphan reaper must leave their exit status to
// their exec.Cmd.
var direct = struct {
	mu   sync.Mutex
	pids map[int]bool // guarded by mu
}{pids: map[int]bool{}}

// RunTracked runs cmd to its end as Cmd.Run does, with its pid registered
// so that the orphan reaper leaves its exit status to cmd.Wait. Every
// process the daemon starts outside a Spawner while a Supervisor is active
// in its own process group (nix, which is killed by group) must be run
// through it: a zombie child that is neither registered nor in the
// daemon's group is taken for an orphan and reaped, and Wait then fails
// with "no child processes".
func RunTracked(cmd *exec.Cmd) error {
	if err := startDirect(cmd); err != nil {
		return err
	}
	defer forget(cmd.Process.Pid)
	return cmd.Wait()
}

// Claim registers pid, a child handed over across an exec, as this
// process's own before the orphan reaper first looks (call it before
// Supervise): one that exits before Adopt must be left for its waiter.
// It makes fds, its pipes, close-on-exec again before anything is started
// (the watchdog Supervise starts would hold them open, and a child stopped
// later would not see its stdin end).
func Claim(pid int, fds ...int) {
	direct.mu.Lock()
	defer direct.mu.Unlock()
	direct.pids[pid] = true
	for _, fd := range fds {
		syscall.CloseOnExec(fd)
	}
}

// forget drops pid from direct once its exec.Cmd has waited for it.
func forget(pid int) {
	direct.mu.Lock()
	delete(direct.pids, pid)
	direct.mu.Unlock()
}

// KillMarked kills every process carrying mark (a child's, or one from
// NewMark), looking again until a look finds none; it returns how many it
// killed. Elsewhere than Linux it kills nothing.
func KillMarked(mark string) int { return killRest(mark, nil) }

// Gone reports whether no process has pid (a zombie still has one).
func Gone(pid int) bool { return syscall.Kill(pid, 0) == syscall.ESRCH }
