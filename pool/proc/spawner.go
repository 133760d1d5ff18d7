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
//	p, err := s.Start(ctx, proc.Command{Path: "server", Args: []string{"server", "--stdio"},
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
	"context"
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
	"mcpx.dev/mcpx/pool/proc/sandbox"
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
	// Sandbox, if set, confines the child (package sandbox) to this
	// policy, whose Env is replaced by the child's (Env and its mark):
	// Start returns once the child is confined and runs, or is gone.
	Sandbox *sandbox.Policy
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
// never races with the wait. ctx bounds a confined child's start (its
// helper's work, Command.Sandbox); a child that fails to start is gone
// when Start returns.
func (s *Spawner) Start(ctx context.Context, c Command) (*Process, error) {
	mark := NewMark()
	cmd := c.command(mark)
	var cell *sandbox.Cell
	if c.Sandbox != nil {
		pol := *c.Sandbox
		pol.Env = cmd.Env
		var err error
		if cell, err = sandbox.Prepare(cmd, pol); err != nil {
			return nil, err
		}
	}
	pipes, err := newPipes()
	if err != nil {
		closeCell(cell)
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pipes.stdinR, pipes.stdoutW, pipes.stderrW
	if err := s.start(cmd); err != nil {
		pipes.closeAll()
		closeCell(cell)
		return nil, err
	}
	pipes.closeChilds() // the child holds its own copies now
	pid := cmd.Process.Pid
	if cell != nil {
		if _, err := cell.Started(ctx); err != nil {
			// Started killed the helper: reap it before saying so.
			cmd.Wait()
			forget(pid)
			cell.Close()
			closeAll(pipes.stdinW, pipes.stdoutR, pipes.stderrR)
			return nil, err
		}
	}
	log := c.Log
	if log != nil {
		log = log.With("pid", pid)
	}
	p := newProcess(cmd, mark, procStart(pid), pipes.stdinW, pipes.stdoutR, pipes.stderrR, log, c.Suppressed, c.Ready)
	p.cell = cell
	go func() {
		p.waitErr = cmd.Wait()
		forget(pid)
		p.closeCell(cmd.ProcessState)
		close(p.exited)
	}()
	return p, nil
}

// pipes are a child's stdin, stdout and stderr: its ends (R, W, W) and
// ours.
type pipes struct {
	stdinR, stdinW, stdoutR, stdoutW, stderrR, stderrW *os.File
}

func newPipes() (*pipes, error) {
	var p pipes
	var err error
	if p.stdinR, p.stdinW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if p.stdoutR, p.stdoutW, err = os.Pipe(); err != nil {
		closeAll(p.stdinR, p.stdinW)
		return nil, err
	}
	if p.stderrR, p.stderrW, err = os.Pipe(); err != nil {
		closeAll(p.stdinR, p.stdinW, p.stdoutR, p.stdoutW)
		return nil, err
	}
	return &p, nil
}

func (p *pipes) closeChilds() { closeAll(p.stdinR, p.stdoutW, p.stderrW) }

func (p *pipes) closeAll() {
	p.closeChilds()
	closeAll(p.stdinW, p.stdoutR, p.stderrR)
}

func closeCell(c *sandbox.Cell) {
	if c != nil {
		c.Close()
	}
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

// ErrNotFound is the error of a command found on no directory of PATH
// (exec.ErrNotFound), for Hint.
var ErrNotFound = exec.ErrNotFound

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

// RunConfined runs cmd to its end as RunTracked does, confined by p
// (package sandbox): cmd.Env becomes p.Env, its whole environment; ctx
// bounds the helper's start. It returns Cmd.Run's error, and the limit
// that ended the process ("limit: memory 1GiB"), "" if none did. Nothing
// of it (its cgroups, its namespaces) is left when it returns. An
// adapter's commands run so (adapter.Scope.Run).
func RunConfined(ctx context.Context, cmd *exec.Cmd, p sandbox.Policy) (limit string, err error) {
	cmd.Env = p.Env
	cell, err := sandbox.Prepare(cmd, p)
	if err != nil {
		return "", err
	}
	if err := startDirect(cmd); err != nil {
		cell.Close()
		return "", err
	}
	defer forget(cmd.Process.Pid)
	if _, err := cell.Started(ctx); err != nil {
		cmd.Wait() // Started killed the helper
		cell.Close()
		return "", err
	}
	err = cmd.Wait()
	cell.Close()
	return cell.Limit(cmd.ProcessState), err
}

// RunnerConfined is an adapter's way to run its commands confined
// (adapter.Scope.Run): each runs by RunConfined, with the policy policyOf
// makes for its executable (cmd.Path, made absolute).
func RunnerConfined(policyOf func(ctx context.Context, path string) (sandbox.Policy, error)) func(context.Context, *exec.Cmd) (string, error) {
	return func(ctx context.Context, cmd *exec.Cmd) (string, error) {
		if !filepath.IsAbs(cmd.Path) && cmd.Dir != "" {
			cmd.Path = filepath.Join(cmd.Dir, cmd.Path) // ./tool, as exec finds it
		}
		p, err := policyOf(ctx, cmd.Path)
		if err != nil {
			return "", err
		}
		return RunConfined(ctx, cmd, p)
	}
}
