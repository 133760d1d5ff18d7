package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// interrupt is how a command is stopped when the context of its run ends.
type interrupt struct {
	signal syscall.Signal // passed on to the command
	grace  time.Duration  // then it is killed this long after; 0 = never
}

// scriptInterrupt stops a script (Run.Script): SIGINT, as a terminal's ^C
// would, and a kill InterruptGrace later.
var scriptInterrupt = interrupt{syscall.SIGINT, InterruptGrace}

// leasedInterrupt stops a command under a lease (RunLeased): an interrupt
// from the terminal reaches it through its process group; one sent to
// this process alone is passed on as SIGTERM, and the command is never
// killed, so the lease is held until it exits.
var leasedInterrupt = interrupt{syscall.SIGTERM, 0}

// wait starts cmd, runs it to its end and returns its exit code (128+n for
// a signal). When ctx ends in is how it is stopped. after, when not nil,
// finishes the start (a confined runtime's); started, when not nil, is
// told its pid once it runs. An error is an *Error: OpStart (the exit
// code is 127, as shells say a command did not run) or OpWait.
func wait(ctx context.Context, cmd *exec.Cmd, in interrupt, started func(int), after func() error) (int, error) {
	if err := cmd.Start(); err != nil {
		return 127, &Error{Op: OpStart, Err: err}
	}
	if after != nil {
		if err := after(); err != nil {
			cmd.Process.Kill()
			cmd.Wait() //nolint:errcheck // killed
			return 127, &Error{Op: OpStart, Err: err}
		}
	}
	if started != nil {
		started(cmd.Process.Pid)
	}
	stopFwd := context.AfterFunc(ctx, func() {
		cmd.Process.Signal(in.signal)
		if in.grace > 0 {
			time.AfterFunc(in.grace, func() { cmd.Process.Kill() })
		}
	})
	defer stopFwd()
	err := cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return 0, &Error{Op: OpWait, Err: err}
}

// RunLeased runs argv under the lease whose id is lease, as `mcpx lease
// run` does: the command gets this process's environment and
// $MCPX_LEASE, and stdin, stdout and stderr. It returns the command's exit
// code, 128+n for a signal. When ctx ends the command is sent SIGTERM and
// waited for, never killed: the lease must be held until it exits. An
// error is an *Error: OpStart (the exit code is 127) or OpWait.
func RunLeased(ctx context.Context, lease string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "MCPX_LEASE="+lease)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	return wait(ctx, cmd, leasedInterrupt, nil, nil)
}

// Capped keeps the first Max bytes written to it (Max 0: all) and counts
// those it drops: a command's output kept for an envelope. Its zero value
// keeps all.
type Capped struct {
	Max     int
	buf     bytes.Buffer
	dropped int
}

// Write keeps what fits of p and never fails: the command writing goes
// on.
func (c *Capped) Write(p []byte) (int, error) {
	keep := len(p)
	if c.Max > 0 {
		keep = min(keep, max(c.Max-c.buf.Len(), 0))
	}
	c.buf.Write(p[:keep])
	c.dropped += len(p) - keep
	return len(p), nil
}

// Bytes are the bytes kept; the caller must not modify them.
func (c *Capped) Bytes() []byte { return c.buf.Bytes() }

// Dropped is how many bytes were written beyond Max.
func (c *Capped) Dropped() int { return c.dropped }

// String is what was kept and, if some was dropped, a line saying how
// much.
func (c *Capped) String() string {
	if c.dropped == 0 {
		return c.buf.String()
	}
	return c.buf.String() + fmt.Sprintf("\n[mcpx: %d more bytes dropped: the output is bounded at %d]", c.dropped, c.Max)
}
