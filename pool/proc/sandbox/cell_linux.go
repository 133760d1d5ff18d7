package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"mcpx.dev/mcpx/pool/proc/sandbox/internal/helper"
)

// Prepare rewrites cmd, not yet started, so that cmd.Start starts it
// confined by p: cmd.Start then runs the helper (this very binary, with
// only the MCPX_ variables of p.Env), which is in the namespaces p needs
// or, the C stage, makes them, and the helper, once Started has sent it
// p, confines itself and execs cmd's program with exactly p.Env. cmd.Env must be nil
// or equal to p.Env; cmd's Dir, stdio, ExtraFiles and SysProcAttr (process
// group, parent-death signal) carry over to the child.
//
// In Enforce mode it returns a *NotEnforcedError when this kernel cannot
// enforce what p needs. The caller must Close the Cell, whether or not
// cmd starts.
func Prepare(cmd *exec.Cmd, p Policy) (*Cell, error) {
	if err := checkCmd(cmd, &p); err != nil {
		return nil, err
	}
	k := Probe()
	enf, err := Plan(&p, k)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox: finding the helper (this executable): %w", err)
	}
	conn, end, err := helperSocket()
	if err != nil {
		return nil, err
	}
	c := &Cell{
		cmd: cmd, policy: p, kernel: k, enforcement: enf, conn: conn, end: end,
		path: cmd.Path, args: slices.Clone(cmd.Args),
	}
	if len(c.args) == 0 {
		c.args = []string{cmd.Path}
	}
	c.rewrite(exe)
	c.cloneInto()
	return c, nil
}

func checkCmd(cmd *exec.Cmd, p *Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	switch {
	case cmd.Err != nil:
		return cmd.Err
	case cmd.Process != nil:
		return errors.New("sandbox: Prepare after cmd.Start")
	case cmd.Env != nil && !slices.Equal(cmd.Env, p.Env):
		return errors.New("sandbox: cmd.Env differs from the policy's env, which is the child's whole environment: set Policy.Env")
	}
	return nil
}

// helperSocket makes the socket the daemon and the helper talk on: the
// daemon's end, and the helper's, which it inherits.
func helperSocket() (*net.UnixConn, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: %w", err)
	}
	mine := os.NewFile(uintptr(fds[0]), "sandbox")
	fc, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, fmt.Errorf("sandbox: %w", err)
	}
	return fc.(*net.UnixConn), os.NewFile(uintptr(fds[1]), "sandbox-helper"), nil
}

// rewrite makes c's cmd start the helper exe, in the namespaces c's
// enforcement plans, with the helper's end of the socket.
func (c *Cell) rewrite(exe string) {
	cmd := c.cmd
	fd := 3 + len(cmd.ExtraFiles)
	cmd.ExtraFiles = append(cmd.ExtraFiles, c.end)
	cmd.Path, cmd.Args = exe, []string{helperArg0}
	// GOGC=off: the helper lives for the runtime's start, a few inits and
	// a few syscalls, and needs no collection; the program never sees it
	// (TestEnvironment).
	cmd.Env = append(helperEnv(c.policy.Env), "GOGC=off", envHelper+"="+strconv.Itoa(fd))
	attr := &syscall.SysProcAttr{}
	if cmd.SysProcAttr != nil {
		a := *cmd.SysProcAttr
		attr = &a
	}
	if f, _ := c.enforcement.Feature(FeatureUserNamespace); f.Enforced {
		n, _ := c.enforcement.Feature(FeatureNetwork)
		net := c.policy.privateNetwork() && n.Enforced
		switch {
		case helper.PreRuntime && !goStage:
			// The C stage makes them itself, once it has read the
			// request and moved itself into its cgroups: neither
			// unshare's exec nor the daemon's fork.
			ns := "ipc"
			if net {
				ns = "ipc,net"
			}
			cmd.Env = append(cmd.Env, envUnshare+"="+ns)
		case nsStage != "":
			// Through unshare, not clone flags: Go's os/exec forks
			// the whole daemon (no vfork) for a child cloned into a
			// user namespace, which then pays a copy-on-write fault
			// for every page it writes afterwards (package doc, "Cost").
			cmd.Path, cmd.Args = nsStage, unshareArgs(nsStage, net, exe)
			c.stage = nsStage
		default:
			setNamespaces(attr, net)
		}
	}
	if helper.PreRuntime && goStage {
		cmd.Env = append(cmd.Env, envGoStage+"=1")
	}
	c.selfJoin = helper.PreRuntime && !goStage
	cmd.SysProcAttr = attr
}

// cloneInto makes the child's v2 cgroup, where the kernel has one for
// it, before the child exists, and has cmd.Start clone it there
// (CLONE_INTO_CGROUP): it never moves, and no move waits for the kernel's
// global lock (package doc, "Cost"). A cgroup it cannot make leaves the
// Cell's kernel without it, so that the plan falls back as in cgroup.
func (c *Cell) cloneInto() {
	if c.kernel.Memory.Version != 2 && c.kernel.Pids.Version != 2 {
		return // none here: no name to make
	}
	cgs, err := newCgroups(c.kernel, 2, cloneName(), c.policy.Limits, false)
	if err == nil && len(cgs) == 0 {
		return
	}
	var f *os.File
	if err == nil {
		f, err = os.Open(cgs[0].Dir)
	}
	if err != nil {
		removeCgroups(cgs)
		c.kernel = c.kernel.without(2, err)
		return
	}
	c.cgroups, c.cgroupFD = cgs, f
	c.cmd.SysProcAttr.UseCgroupFD, c.cmd.SysProcAttr.CgroupFD = true, int(f.Fd())
}

// helperEnv is what of the child's environment the helper gets: the
// daemon's MCPX_ markers (the pool's, which its watchdog kills by; tests'),
// nothing meant for the program (LD_PRELOAD, GODEBUG) that would act on
// the helper before it has confined itself.
func helperEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "MCPX_") {
			out = append(out, kv)
		}
	}
	return out
}

// Started finishes the start of the Cell's cmd, which the caller has
// started: it makes the child's v1 cgroups (its v2 one it was cloned
// into), sends the helper the policy (the C stage moves itself into the
// v1 cgroups; the Go helper Started moves), and waits until the helper has confined itself and exec'd the
// program (or failed to: then it kills the helper, and the caller waits
// for cmd as after any failed start). It returns what confines the child.
func (c *Cell) Started(ctx context.Context) (Enforcement, error) {
	c.end.Close() // the helper holds its own copy
	c.closeCgroupFD()
	if c.cmd.Process == nil {
		return Enforcement{}, errors.New("sandbox: Started before cmd.Start")
	}
	enf, err := c.start(ctx, c.cmd.Process.Pid)
	if err != nil {
		c.cmd.Process.Kill()
		return Enforcement{}, err
	}
	c.mu.Lock()
	c.enforcement = enf
	c.mu.Unlock()
	return enf, nil
}

func (c *Cell) start(ctx context.Context, pid int) (Enforcement, error) {
	k, cgs := c.cgroup(pid)
	enf, err := Plan(&c.policy, k)
	if err != nil {
		return enf, err
	}
	req, failed := requestFor(&c.policy, k, enf)
	req.Path, req.Args = c.path, c.args
	if c.selfJoin {
		req.Join = selfJoins(cgs)
	}
	if err := enf.apply(helper.Report{Failures: failed}); err != nil {
		return enf, err
	}
	b := req.Encode()
	if len(b) > helper.MaxRequest {
		return enf, fmt.Errorf("sandbox: the policy is %d bytes, more than the %d the helper reads", len(b), helper.MaxRequest)
	}
	defer c.deadline(ctx)()
	if _, err := c.conn.Write(b); errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
		return enf, c.exitedEarly()
	} else if err != nil {
		return enf, fmt.Errorf("sandbox: sending the policy to the helper: %w", err)
	}
	return c.replies(enf)
}

// cgroup makes the child pid's v1 cgroups where the kernel has them
// writable and, unless the helper moves itself (selfJoin), moves pid into
// them (its v2 cgroup it was cloned into: cloneInto). It returns the
// kernel as it turned out: without the cgroups that could not be made, so
// that the plan falls back to the rlimits (and Enforce refuses what they
// cannot hold); and the v1 cgroups.
func (c *Cell) cgroup(pid int) (Kernel, []cgroup) {
	k := c.kernel
	cgs, err := newCgroups(k, 1, cgroupName(pid), c.policy.Limits, true)
	if err == nil && !c.selfJoin {
		err = joinCgroups(cgs, pid)
	}
	c.mu.Lock()
	c.cgroups = append(c.cgroups, cgs...)
	c.mu.Unlock()
	if err != nil {
		return k.without(1, err), nil
	}
	return k, cgs
}

// without is k with no cgroup of version, for err.
func (k Kernel) without(version int, err error) Kernel {
	for _, d := range []*CgroupDir{&k.Memory, &k.Pids} {
		if d.Version == version {
			*d = CgroupDir{}
		}
	}
	k.CgroupWhy = err.Error()
	return k
}

// closeCgroupFD closes the v2 cgroup's directory, which cmd.Start has
// cloned the child into, or which it never will.
func (c *Cell) closeCgroupFD() {
	if c.cgroupFD != nil {
		c.cgroupFD.Close()
		c.cgroupFD = nil
	}
}

// deadline makes the socket's reads and writes fail when ctx is done,
// until the returned func runs.
func (c *Cell) deadline(ctx context.Context) (stop func() bool) {
	if d, ok := ctx.Deadline(); ok {
		c.conn.SetDeadline(d)
	}
	return context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Now()) })
}

// replyBufs hold the buffers replies reads into: zeroing a fresh one per
// start showed in the spawn benchmark.
var replyBufs = sync.Pool{New: func() any { b := make([]byte, helper.MaxReply); return &b }}

// replies reads the helper's messages until its end closes on exec; enf
// is the plan it was sent, which its report amends.
func (c *Cell) replies(enf Enforcement) (Enforcement, error) {
	bp := replyBufs.Get().(*[]byte)
	defer replyBufs.Put(bp)
	buf, oob := *bp, make([]byte, unix.CmsgSpace(4))
	reported := false
	for {
		n, oobn, _, _, err := c.conn.ReadMsgUnix(buf, oob)
		closed := errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) // ECONNRESET: it exited with the request unread
		if err != nil && !closed {
			return Enforcement{}, fmt.Errorf("sandbox: waiting for the helper: %w", err)
		}
		if err != nil || n == 0 && oobn == 0 { // its end closed
			if !reported {
				return Enforcement{}, c.exitedEarly()
			}
			return enf, nil // closed on exec: the program runs
		}
		switch buf[0] {
		case helper.ReplyError:
			closeRights(oob[:oobn])
			return Enforcement{}, errors.New(string(buf[1:n]))
		case helper.ReplyListener:
			if err := c.takeListener(oob[:oobn]); err != nil {
				return Enforcement{}, err
			}
		case helper.ReplyReport:
			rep, err := helper.DecodeReport(buf[1:n])
			if err == nil {
				err = enf.apply(rep)
			}
			if err != nil {
				return Enforcement{}, err
			}
			reported = true
		default:
			closeRights(oob[:oobn])
			return Enforcement{}, fmt.Errorf("sandbox: the helper sent a reply of kind %q", buf[0])
		}
	}
}

// exitedEarly is the error of a helper that exited before it reported.
func (c *Cell) exitedEarly() error {
	err := errors.New("sandbox: the helper exited before it confined the child")
	if c.stage != "" {
		err = fmt.Errorf("%w (started through %s, whose error is the child's stderr)", err, c.stage)
	}
	return err
}

// takeListener makes the Cell's listener of the file descriptor in oob.
func (c *Cell) takeListener(oob []byte) error {
	fds := rights(oob)
	if len(fds) != 1 {
		closeFDs(fds)
		return fmt.Errorf("sandbox: the helper sent %d listeners, not 1", len(fds))
	}
	f := os.NewFile(uintptr(fds[0]), "proxy-listener")
	defer f.Close()
	l, err := net.FileListener(f)
	if err != nil {
		return fmt.Errorf("sandbox: the helper's listener: %w", err)
	}
	c.mu.Lock()
	c.listener = l
	c.mu.Unlock()
	return nil
}

func rights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if r, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, r...)
		}
	}
	return fds
}

func closeRights(oob []byte) { closeFDs(rights(oob)) }

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// Close releases what the Cell holds: its end of the helper's socket, the
// proxy listener (and with it the child's network namespace, once the
// child is gone), and its cgroups, killing whatever is still in them. Call
// it after cmd.Wait: everything the child started dies with it. It reads
// the cgroups' limit counters first, for Limit.
func (c *Cell) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.conn != nil { // a Resumed Cell has no helper socket
		c.conn.Close()
	}
	c.end.Close()
	c.closeCgroupFD() // cmd never started
	if c.listener != nil {
		c.listener.Close()
	}
	c.counters = readCounters(c.cgroups)
	left, err := removeCgroups(c.cgroups)
	c.counters.Left = left
	return err
}

// requestFor is what the helper does for p on kernel k, as plan decides
// it (enf): the steps, each with the features it enforces, and which
// features' failure refuses the exec (Enforce mode: the needed ones). A
// step that cannot even be described here (no seccomp filter for this
// architecture) is left out and returned as failed.
func requestFor(p *Policy, k Kernel, enf Enforcement) (helper.Request, []helper.Failure) {
	var r helper.Request
	var failed []helper.Failure
	r.Env = p.Env
	if p.privateNetwork() && k.Namespaces {
		r.LoopbackUp, r.Network = true, []string{FeatureNetwork}
		if p.network() == NetworkProxy {
			r.ProxyPort = p.proxyPort()
		}
	}
	tcp := p.network() == NetworkLoopback && k.Landlock >= 4
	noUnix, noMPTCP := !p.UnixSockets && k.Landlock < 9, tcp && mptcpFilter
	if noUnix {
		r.SeccompFeatures = append(r.SeccompFeatures, FeatureUnixSockets)
	}
	if noMPTCP {
		r.SeccompFeatures = append(r.SeccompFeatures, FeatureNetwork)
	}
	if prog, err := seccompProgram(noUnix, noMPTCP); err != nil {
		failed = append(failed, helper.Failure{Features: r.SeccompFeatures, Why: err.Error()})
	} else {
		r.Seccomp = encodeFilter(prog)
	}
	if k.Landlock > 0 {
		features := []string{FeatureFilesystem, FeatureIPC}
		if tcp {
			features = append(features, FeatureNetwork)
		}
		if k.Landlock >= 9 {
			features = append(features, FeatureUnixSockets)
		}
		if rs, err := landlockRuleset(p, k.Landlock, tcp); err != nil {
			failed = append(failed, helper.Failure{Features: features, Why: err.Error()})
		} else {
			rs.Features = features
			r.Landlock = rs
		}
	}
	r.Rlimits = rlimitsFor(p.Limits, k)
	r.Capabilities = FeatureCapabilities
	if enf.Mode == Enforce {
		for _, f := range enf.Features {
			if f.Needed {
				r.Fatal = append(r.Fatal, f.Name)
			}
		}
	}
	return r, failed
}

// rlimitsFor are the rlimits the helper sets for l on kernel k: the
// limits no cgroup holds.
func rlimitsFor(l Limits, k Kernel) []helper.Rlimit {
	var out []helper.Rlimit
	add := func(feature string, res int, cur, max uint64) {
		out = append(out, helper.Rlimit{Feature: feature, Resource: res, Cur: cur, Max: max})
	}
	add(FeatureCoreDumps, unix.RLIMIT_CORE, 0, 0)
	if l.OpenFiles > 0 {
		add(FeatureOpenFiles, unix.RLIMIT_NOFILE, uint64(l.OpenFiles), uint64(l.OpenFiles))
	}
	if n := l.cpuSeconds(); n > 0 {
		add(FeatureCPU, unix.RLIMIT_CPU, n, n+1)
	}
	if l.Processes > 0 && k.Pids.Dir == "" && !k.Root {
		add(FeatureProcesses, unix.RLIMIT_NPROC, uint64(l.Processes), uint64(l.Processes))
	}
	if l.Memory > 0 && k.Memory.Dir == "" {
		add(FeatureMemory, unix.RLIMIT_DATA, uint64(l.Memory), uint64(l.Memory))
	}
	return out
}

// apply marks the features of rep's failed steps not enforced, with why;
// if rep says the helper refused to exec, it returns the
// *NotEnforcedError that names what is missing.
func (e *Enforcement) apply(rep helper.Report) error {
	refused := rep.Refused
	for _, f := range rep.Failures {
		for _, name := range f.Features {
			e.set(name, func(f0 *Feature) {
				if f0.Enforced {
					f0.Enforced, f0.Why = false, f.Why
				}
				refused = refused || f0.Needed && e.Mode == Enforce
			})
		}
	}
	if refused {
		return &NotEnforcedError{Missing: e.Missing()}
	}
	return nil
}
