package paths

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"
)

// Alive reports whether process pid is alive: it exists (signal 0; EPERM
// says it exists but is another user's) and is not a zombie. A zombie has
// exited and only waits for its parent to reap it: it serves nothing, so
// a daemon record naming it is stale.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return !zombie(pid)
}

// WaitGone waits until process pid is gone (Alive is false), polling,
// until ctx ends; it reports whether the process went.
func WaitGone(ctx context.Context, pid int) bool {
	for Alive(pid) {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	return true
}

// Answers reports whether something accepts connections on the unix socket
// sock (within a second).
func Answers(sock string) bool {
	c, err := net.DialTimeout("unix", sock, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
