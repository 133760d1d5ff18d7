package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// MaybeExec turns this process into the sandbox's helper when Prepare
// started it so, and then never returns: the helper confines itself and
// execs the child's program, or exits. Otherwise it returns at once. Call
// it first thing in main (and in a test binary's TestMain), before
// anything starts goroutines that matter.
func MaybeExec() {
	v, ok := os.LookupEnv(envHelper)
	if !ok {
		return
	}
	fd, err := strconv.Atoi(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpx sandbox helper: %s=%q is no file descriptor\n", envHelper, v)
		os.Exit(126)
	}
	os.Exit(runHelper(fd))
}

// runHelper confines this process as the daemon's request on fd says and
// execs the program; it returns only if it could not.
func runHelper(fd int) int {
	// Never unlocked: Landlock and no_new_privs are set on this thread
	// only, and the exec from this thread is what carries them over.
	runtime.LockOSThread()
	unix.CloseOnExec(fd)
	req, err := readRequest(fd)
	if err != nil {
		return fail(fd, err)
	}
	h := &helper{fd: fd, req: req, enf: req.Plan}
	if err := h.confine(); err != nil {
		return fail(fd, err)
	}
	if m := h.enf.Missing(); len(m) > 0 && h.enf.Mode == Enforce {
		return fail(fd, &NotEnforcedError{Missing: m})
	}
	if err := send(fd, reply{Report: &h.enf}, -1); err != nil {
		return 126
	}
	err = syscall.Exec(req.Path, req.Args, req.Policy.Env)
	if errors.Is(err, syscall.EACCES) {
		err = fmt.Errorf("%w (is it under the policy's read or write paths?)", err)
	}
	return fail(fd, fmt.Errorf("sandbox: starting %s: %w", req.Path, err))
}

type helper struct {
	fd  int
	req request
	enf Enforcement
}

// confine does the request's setup in order: the network, no_new_privs,
// seccomp, Landlock, the rlimits, capabilities. A step that fails marks
// its feature not enforced (runHelper then refuses, in Enforce mode, if
// the policy needed it); an error is for what must not be skipped.
func (h *helper) confine() error {
	s := h.req.Setup
	if s.LoopbackUp {
		h.check(FeatureNetwork, loopbackUp())
	}
	if s.ProxyPort != 0 {
		if err := h.sendListener(s.ProxyPort); err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		h.check(FeatureNoNewPrivs, err)
		return fmt.Errorf("sandbox: prctl(PR_SET_NO_NEW_PRIVS): %w", err) // Landlock needs it
	}
	if s.Seccomp {
		err := installSeccomp(s.NoUnix, s.NoMPTCP)
		if s.NoUnix {
			h.check(FeatureUnixSockets, err)
		}
		if s.NoMPTCP {
			h.check(FeatureNetwork, err)
		}
	}
	if s.Landlock > 0 {
		err := restrictLandlock(&h.req.Policy, s)
		h.check(FeatureFilesystem, err)
		h.check(FeatureIPC, err)
		if s.LandlockTCP {
			h.check(FeatureNetwork, err)
		}
		if s.Landlock >= 9 {
			h.check(FeatureUnixSockets, err)
		}
	}
	// Last: a low open-files limit must not fail the steps above, and
	// a limit above the daemon's may need the capabilities dropped next.
	for _, r := range s.Rlimits {
		h.check(r.Feature, unix.Setrlimit(r.Resource, &unix.Rlimit{Cur: r.Cur, Max: r.Max}))
	}
	h.check(FeatureCapabilities, dropCapabilities())
	return nil
}

// check marks feature not enforced if err says its step failed.
func (h *helper) check(feature string, err error) {
	if err == nil {
		return
	}
	h.enf.set(feature, func(f *Feature) {
		if f.Enforced {
			f.Enforced, f.Why = false, err.Error()
		}
	})
}

// sendListener makes the proxy's listener on this namespace's 127.0.0.1
// and sends it to the daemon; it keeps no copy.
func (h *helper) sendListener(port uint16) error {
	lfd, err := loopbackListener(port)
	if err != nil {
		return fmt.Errorf("sandbox: listening on the child's 127.0.0.1:%d for the proxy: %w", port, err)
	}
	defer unix.Close(lfd)
	return send(h.fd, reply{Listener: true}, lfd)
}

func readRequest(fd int) (request, error) {
	// Peek first: MSG_TRUNC makes it return the message's whole length.
	n, _, _, _, err := unix.Recvmsg(fd, nil, nil, unix.MSG_PEEK|unix.MSG_TRUNC)
	if err != nil {
		return request{}, fmt.Errorf("sandbox: reading the policy: %w", err)
	}
	buf := make([]byte, min(max(n, 1), maxMessage))
	n, _, flags, _, err := unix.Recvmsg(fd, buf, nil, 0)
	switch {
	case err != nil:
		return request{}, fmt.Errorf("sandbox: reading the policy: %w", err)
	case n == 0:
		return request{}, errors.New("sandbox: the daemon closed before sending the policy")
	case flags&unix.MSG_TRUNC != 0:
		return request{}, errors.New("sandbox: the policy was cut short")
	}
	var req request
	if err := json.Unmarshal(buf[:n], &req); err != nil {
		return request{}, fmt.Errorf("sandbox: reading the policy: %w", err)
	}
	return req, nil
}

// send writes r to the daemon, with the file descriptor passed (if not -1).
func send(fd int, r reply, passed int) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	var oob []byte
	if passed >= 0 {
		oob = unix.UnixRights(passed)
	}
	return unix.Sendmsg(fd, b, oob, nil, 0)
}

func fail(fd int, err error) int {
	send(fd, reply{Err: err.Error()}, -1)
	return 126
}
