// Package proc is the pool's OS machinery: it starts child processes and
// stops them, and keeps what they start from outliving the daemon. It
// knows processes, pipes, process groups, the subreaper, /proc and
// signals; it knows nothing of servers, scope keys or instances (package
// pool, above it, does).
//
//	sup, _ := proc.Supervise(stateDir, log) // once per daemon
//	defer sup.Close()
//	s := proc.NewSpawner()
//	defer s.Close()
//	p, err := s.Start(proc.Command{Path: "server", Args: []string{"server", "--stdio"},
//		Env: proc.Environ(os.Environ(), proc.Env{}), Log: log})
//	// speak to p.Stdin() and p.Stdout(); select on p.Exited()
//	p.Stop(ctx)
//
// # Overview
//
// A child is started from the Spawner's one locked OS thread (its
// parent-death signal is tied to that thread), as the leader of its own
// process group, with an environment built from an allowlist (Environ)
// and marked (MarkEnv) so that whatever it starts can be found again. Its
// stderr is logged at a bounded rate and kept as a tail. Process.Stop is
// the MCP stdio shutdown sequence, then the kill of everything the child
// left: its group, its tree and its mark.
//
// Supervise makes the daemon a child subreaper that reaps orphans, kills
// what an earlier daemon of the same state directory left, and starts
// the watchdog (MaybeWatch), a process that outlives a killed daemon just
// long enough to kill what it marked, and, when asked (Process.Keep),
// holds children's pipes for the next daemon (the keeper).
package proc

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"

	"mcpx.dev/mcpx/internal/launcher"
)

// Command is what a child needs to start.
type Command struct {
	// Path is the program: a path, or a name looked up in the daemon's
	// PATH, as exec.Command looks it up.
	Path string
	// Args are the child's argv, Args[0] its name as it sees it; nil =
	// just Path.
	Args []string
	Dir  string   // its working directory; "" = the daemon's
	Env  []string // its whole environment (Environ), to which Start adds its mark
	// Log receives the child's stderr lines, with its pid, at most
	// stderrRate a second (stderr.go); nil = discard.
	Log *slog.Logger
	// Suppressed, if set, counts the stderr lines over the rate.
	Suppressed *atomic.Int64
	// Ready, if set, closes Process.Ready when a stderr line matches it.
	Ready *regexp.Regexp
}

// command is the exec.Cmd of c, marked with mark, in a process group of
// its own; Start gives it its pipes.
func (c Command) command(mark string) *exec.Cmd {
	cmd := exec.Command(c.Path)
	if len(c.Args) > 0 {
		cmd.Args = c.Args
	}
	cmd.Dir = c.Dir
	cmd.Env = append(c.Env[:len(c.Env):len(c.Env)], MarkEnv+"="+mark)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// Spawner starts every child from one OS thread that lives as long as it
// does. Children get SIGKILL as their parent-death signal, and Linux sends
// it when the *thread* that forked them exits; Go may retire threads, so
// forking from an arbitrary goroutine would kill children at random. From
// this locked thread, the signal means what we want: the daemon is gone (a
// SIGKILL or a crash skips Close), so its children go too.
type Spawner struct {
	reqs      chan spawnReq
	done      sync.WaitGroup
	closeOnce sync.Once
}

type spawnReq struct {
	cmd   *exec.Cmd
	reply chan error
}

// NewSpawner starts a spawner's thread; Close stops it.
func NewSpawner() *Spawner {
	s := &Spawner{reqs: make(chan spawnReq)}
	s.done.Go(func() {
		// Never unlocked: the thread exits with the goroutine at close,
		// after every child has been stopped.
		runtime.LockOSThread()
		for r := range s.reqs {
			r.reply <- startDirect(r.cmd)
		}
	})
	return s
}

// Start starts c as a process in its own process group, with a new mark.
// Stdout and stderr are our own os.Pipes, not exec.Cmd's, so reading them
// never races with the wait.
func (s *Spawner) Start(c Command) (*Process, error) {
	mark := NewMark()
	cmd := c.command(mark)
	// TODO(#32, 2026-12-06): a server's containment (Landlock, namespaces,
	// rlimits, the egress proxy) is to be applied to cmd here, from a
	// field of Command, before its pipes are made and it starts.
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
	if err := s.start(cmd); err != nil {
		closeAll(stdinR, stdinW, stdoutR, stdoutW, stderrR, stderrW)
		return nil, err
	}
	// The child holds its own copies now.
	closeAll(stdinR, stdoutW, stderrW)
	pid := cmd.Process.Pid
	log := c.Log
	if log != nil {
		log = log.With("pid", pid)
	}
	p := newProcess(cmd, mark, procStart(pid), stdinW, stdoutR, stderrR, log, c.Suppressed, c.Ready)
	go func() {
		p.waitErr = cmd.Wait()
		forget(pid)
		close(p.exited)
	}()
	return p, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// start runs cmd.Start on the spawner's thread.
func (s *Spawner) start(cmd *exec.Cmd) error {
	setDeathSignal(cmd)
	reply := make(chan error, 1)
	s.reqs <- spawnReq{cmd, reply}
	return <-reply
}

// Close stops the spawner; no Start may follow.
func (s *Spawner) Close() {
	s.closeOnce.Do(func() { close(s.reqs) })
	s.done.Wait()
}

// startDirect starts cmd and registers its pid in direct before the orphan
// reaper may look again: a child that exits at once must still be left
// for its exec.Cmd to wait for. The caller forgets it after that wait.
func startDirect(cmd *exec.Cmd) error {
	direct.mu.Lock()
	defer direct.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	direct.pids[cmd.Process.Pid] = true
	return nil
}

// Hint is the fix for a command that would not start (err is Start's):
// how to get it, when it is a launcher that is not installed (uvx,
// docker, dnx, node: what `mcpx registry add` writes), else the general
// advice.
func Hint(command string, err error) string {
	if errors.Is(err, exec.ErrNotFound) {
		if h := launcher.Hint(filepath.Base(command)); h != "" {
			return h + ", on the daemon's machine (its PATH)"
		}
	}
	return "check the server's command and that it is installed on the daemon's machine"
}
