package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"mcpx.dev/mcpx/internal/paths"
	"mcpx.dev/mcpx/wire"
)

// AutostartOptions are what Client.Autostart needs: the daemon a command
// chose, and the switches that turn starting one off.
type AutostartOptions struct {
	// Socket, StateDir and Config are the daemon the command chose (the
	// default daemon, or that of its --config): one is started only on
	// Socket, and serves StateDir and Config ("" = the default config).
	Socket, StateDir, Config string
	// Off is --no-autostart: start none.
	Off bool
	// Getenv reads $MCPX_NO_AUTOSTART (set, and not "0" or "false": start
	// none); nil = os.Getenv.
	Getenv func(string) string
	// Binary is the mcpx that serves the daemon (`mcpx serve`); "" = this
	// executable.
	Binary string
	// Timeout bounds the start (StartOptions.Timeout); 0 = 30s.
	Timeout time.Duration
}

// Autostart starts a daemon in the background when none answers on c's
// socket (EnsureDaemon, running `mcpx serve` with o's socket, state
// directory and config), unless o or $MCPX_NO_AUTOSTART says not to:
// nothing needs a service for local use. A daemon reached by URL is never
// started: it may be another machine's, and its address is not ours to
// choose. Nor is one on a socket other than o.Socket (--broker,
// $MCPX_BROKER): a daemon there was started with its own config and state
// directory, which a new one would not have; the command's first request
// then fails, naming the socket. It returns the started daemon's pid, or
// 0 if it started none.
func (c *Client) Autostart(ctx context.Context, o AutostartOptions) (int, error) {
	if !c.mayAutostart(o) {
		return 0, nil
	}
	bin := o.Binary
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return 0, fmt.Errorf("finding the mcpx binary to start the daemon: %w", err)
		}
		bin = exe
	}
	return EnsureDaemon(ctx, StartOptions{Socket: c.addr, StateDir: o.StateDir, Timeout: o.Timeout,
		Command: func() *exec.Cmd {
			args := []string{"serve", "--socket", c.addr, "--state-dir", o.StateDir}
			if o.Config != "" {
				args = append(args, "--config", o.Config)
			}
			return exec.Command(bin, args...)
		}})
}

// mayAutostart is Autostart's policy: whether c's daemon may be started.
func (c *Client) mayAutostart(o AutostartOptions) bool {
	if o.Off || !c.unix || !(paths.Daemon{Socket: o.Socket}).SocketIs(c.addr) {
		return false
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	v := getenv("MCPX_NO_AUTOSTART")
	return v == "" || v == "0" || v == "false"
}

// StartOptions configure EnsureDaemon.
type StartOptions struct {
	Socket   string // the unix socket the daemon serves; required
	StateDir string // holds the lock file and the daemon's log; required
	// Command returns the command that runs the daemon in the foreground,
	// e.g. exec.Command("mcpx", "serve", "--socket", sock). EnsureDaemon
	// sets its standard streams (the log), its session and, if unset, its
	// directory.
	Command func() *exec.Cmd
	// Timeout bounds the wait for another starter's lock and for the new
	// daemon's socket; 0 = 30s.
	Timeout time.Duration
}

// lockFile serialises the starters of one state directory.
const lockFile = "autostart.lock"

// StartError is a daemon that EnsureDaemon could not start, or that did not
// answer in time.
type StartError struct {
	Log     string // the daemon's log file
	LogTail string // what the daemon wrote before it failed
	Err     error
}

func (e *StartError) Error() string {
	s := fmt.Sprintf("starting the daemon: %v", e.Err)
	if e.LogTail != "" {
		s += "\n" + e.LogTail
	}
	return s
}

func (e *StartError) Unwrap() error { return e.Err }

// EnsureDaemon makes sure a daemon answers on o.Socket. If none does, it
// starts o.Command in the background, in a session of its own (it outlives
// the caller and its terminal), writing to wire.LogFile in o.StateDir, and
// waits until the socket answers. Starters in any number of processes start
// exactly one daemon: they take an exclusive flock on a lock file in
// o.StateDir in turn, and whoever gets it second finds the socket answering.
// It returns the started daemon's pid, or 0 if one was already serving.
func EnsureDaemon(ctx context.Context, o StartOptions) (int, error) {
	if paths.Answers(o.Socket) {
		return 0, nil
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := os.MkdirAll(o.StateDir, 0o700); err != nil {
		return 0, &StartError{Err: err}
	}
	unlock, err := lock(ctx, filepath.Join(o.StateDir, lockFile))
	if err != nil {
		return 0, &StartError{Err: err}
	}
	defer unlock()
	if paths.Answers(o.Socket) { // another starter won the race
		return 0, nil
	}
	return start(ctx, o)
}

// lock takes an exclusive flock on path, polling until ctx is done. The
// kernel drops it when the process dies, so a crashed starter blocks no one.
func lock(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another client to start the daemon (%s): %w", path, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// start runs the daemon and waits, bounded by ctx, until its socket answers.
func start(ctx context.Context, o StartOptions) (int, error) {
	logPath := filepath.Join(o.StateDir, wire.LogFile)
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, &StartError{Log: logPath, Err: err}
	}
	defer log.Close() // the daemon has its own copy
	from, _ := log.Seek(0, io.SeekEnd)
	cmd := o.Command()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, log, log
	if cmd.Dir == "" {
		cmd.Dir = "/" // hold no caller's directory
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
	if err := cmd.Start(); err != nil {
		return 0, &StartError{Log: logPath, Err: err}
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // reaps it, whenever it ends
	fail := func(err error) (int, error) {
		return 0, &StartError{Log: logPath, LogTail: tail(logPath, from), Err: err}
	}
	for !paths.Answers(o.Socket) {
		select {
		case err := <-exited:
			return fail(fmt.Errorf("the daemon (pid %d) exited: %v; its log is %s", cmd.Process.Pid, err, logPath))
		case <-ctx.Done():
			return fail(fmt.Errorf("the daemon (pid %d) did not answer on %s: %w; its log is %s", cmd.Process.Pid, o.Socket, ctx.Err(), logPath))
		case <-time.After(20 * time.Millisecond):
		}
	}
	return cmd.Process.Pid, nil
}

// tail returns the last lines written to path after offset from.
func tail(path string, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size()-from > 4096 {
		from = fi.Size() - 4096
	}
	f.Seek(from, io.SeekStart)
	b, _ := io.ReadAll(io.LimitReader(f, 4096))
	return strings.TrimSpace(string(b))
}
