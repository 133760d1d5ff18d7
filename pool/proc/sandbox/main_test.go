//go:build linux

package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// TestMain makes the test binary three things: the tests; the sandbox's
// helper (MaybeExec, as cmd/mcpx does); and, with envOps set, the child
// that the tests confine, which runs the operations it is given (mostly
// attacks) and prints one JSON result per line.
func TestMain(m *testing.M) {
	sandbox.MaybeExec()
	if ops := os.Getenv(envOps); ops != "" {
		os.Exit(child(ops))
	}
	os.Exit(m.Run())
}

const envOps = "SANDBOX_TEST_OPS"

// op is one thing the child does: Do names it, Arg is its argument.
type op struct {
	Do  string `json:"do"`
	Arg string `json:"arg,omitempty"`
}

// result is what one op did: Err is "" if it succeeded.
type result struct {
	op
	Err string `json:"err,omitempty"`
	Out string `json:"out,omitempty"`
}

func child(ops string) int {
	var list []op
	if err := json.Unmarshal([]byte(ops), &list); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	code := 0
	enc := json.NewEncoder(os.Stdout)
	for _, o := range list {
		out, err := do(o)
		r := result{op: o, Out: out}
		if err != nil {
			r.Err = err.Error()
			code = 3
		}
		enc.Encode(r)
	}
	return code
}

// do runs one op.
func do(o op) (string, error) {
	switch o.Do {
	case "read":
		b, err := os.ReadFile(o.Arg)
		return string(b), err
	case "write":
		return "", os.WriteFile(o.Arg, []byte("written by the confined child\n"), 0o644)
	case "env":
		return strings.Join(os.Environ(), "\n"), nil
	case "connect":
		network, addr, _ := strings.Cut(o.Arg, " ")
		return "", connect(network, addr)
	case "listen-self":
		return "", listenSelf()
	case "forks":
		n, _ := strconv.Atoi(o.Arg)
		return forks(n)
	case "setnproc":
		n, _ := strconv.ParseUint(o.Arg, 10, 64)
		return "", unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: n, Max: n})
	case "alloc":
		n, _ := strconv.Atoi(o.Arg)
		return alloc(n)
	case "spin":
		//lint:ignore SA5002 the child burns CPU until RLIMIT_CPU ends it
		for {
		}
	case "files":
		n, _ := strconv.Atoi(o.Arg)
		return files(n)
	case "kill":
		pid, sig, _ := strings.Cut(o.Arg, " ")
		p, _ := strconv.Atoi(pid)
		s, _ := strconv.Atoi(sig)
		return "", syscall.Kill(p, syscall.Signal(s))
	case "ptrace":
		pid, _ := strconv.Atoi(o.Arg)
		return "", ptraceSeize(pid)
	case "userns":
		return os.Readlink("/proc/self/ns/user")
	case "status":
		b, err := os.ReadFile("/proc/self/status")
		return string(b), err
	case "escape":
		return escape()
	case "shm":
		key, _ := strconv.Atoi(o.Arg)
		_, err := unix.SysvShmGet(key, 0, 0)
		return "", err
	case "fds":
		return openFiles()
	case "sleep":
		time.Sleep(time.Hour)
		return "", nil
	}
	return "", fmt.Errorf("unknown op %q", o.Do)
}

// connect dials addr and says a word: "tcp", "unix", "unix-abstract" (the
// name without its @), or "mptcp" (a Multipath TCP socket by hand).
func connect(network, addr string) error {
	switch network {
	case "mptcp":
		return connectMPTCP(addr)
	case "unix-abstract":
		network, addr = "unix", "@"+addr
	}
	c, err := net.DialTimeout(network, addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	// Connected is what counts: a peer that has looked and closed fails
	// the write.
	c.Write([]byte("hello\n"))
	// Hold the connection until the other end closes it, so that it can
	// look at its peer.
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	io.Copy(io.Discard, c)
	return nil
}

func connectMPTCP(addr string) error {
	ap, err := net.ResolveTCPAddr("tcp4", addr)
	if err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_MPTCP)
	if err != nil {
		return fmt.Errorf("socket(IPPROTO_MPTCP): %w", err)
	}
	defer unix.Close(fd)
	sa := &unix.SockaddrInet4{Port: ap.Port}
	copy(sa.Addr[:], ap.IP.To4())
	return unix.Connect(fd, sa)
}

// listenSelf listens on its own 127.0.0.1 and connects to itself: the
// loopback of a private network namespace is up.
func listenSelf() error {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.Close()
	c, err := net.Dial("tcp4", l.Addr().String())
	if err != nil {
		return err
	}
	return c.Close()
}

// forks starts up to n /bin/sleep processes, stopping at the first
// refusal, then kills and reaps them. It reports how many started; its
// error is the refusal. No goroutines, no new threads: at a pids limit
// the Go runtime could not make one.
func forks(n int) (string, error) {
	var pids []int
	var err error
	for range n {
		var pid int
		pid, err = syscall.ForkExec("/bin/sleep", []string{"sleep", "60"}, &syscall.ProcAttr{Env: os.Environ()})
		if err != nil {
			break
		}
		pids = append(pids, pid)
	}
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
		syscall.Wait4(pid, nil, 0, nil)
	}
	return strconv.Itoa(len(pids)), err
}

// alloc allocates and touches n MiB, one at a time.
func alloc(n int) (string, error) {
	var keep [][]byte
	for i := range n {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = byte(i)
		}
		keep = append(keep, b)
	}
	runtime.KeepAlive(keep)
	return strconv.Itoa(len(keep)), nil
}

// files opens /dev/null n times, keeping each open.
func files(n int) (string, error) {
	var fs []*os.File
	defer func() {
		for _, f := range fs {
			f.Close()
		}
	}()
	for range n {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return strconv.Itoa(len(fs)), err
		}
		fs = append(fs, f)
	}
	return strconv.Itoa(len(fs)), nil
}

// openFiles lists this process's open files, one "fd -> target" a line.
func openFiles() (string, error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return "", err
	}
	var lines []string
	for _, e := range ents {
		target, _ := os.Readlink("/proc/self/fd/" + e.Name())
		lines = append(lines, e.Name()+" -> "+target)
	}
	return strings.Join(lines, "\n"), nil
}

func ptraceSeize(pid int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(pid), 0, 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil // detached when this process exits
}

// escape starts a /bin/sleep that leaves the child's process group and
// session (setsid), as a daemonizing server would, and reports its pid.
func escape() (string, error) {
	pid, err := syscall.ForkExec("/bin/sleep", []string{"sleep", "300"}, &syscall.ProcAttr{
		Env: os.Environ(),
		Sys: &syscall.SysProcAttr{Setsid: true},
	})
	return strconv.Itoa(pid), err
}

// run is one child's run.
type run struct {
	results []result
	state   *os.ProcessState
	limit   string // the Cell's Limit, confined runs only
	enf     sandbox.Enforcement
	stderr  string
}

// get returns the result of the op whose Do+Arg is key.
func (r run) get(t *testing.T, key string) result {
	t.Helper()
	for _, res := range r.results {
		if res.Do+res.Arg == key {
			return res
		}
	}
	t.Fatalf("no result for %s (exit %v); stderr:\n%s", key, r.state, r.stderr)
	return result{}
}

// testBinary is this test binary, which the tests confine as the child.
func testBinary(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// runConfined runs the child with ops, confined by p (whose Env gets the
// ops, the test's process marker and a PATH), and returns what it did.
func runConfined(t *testing.T, p sandbox.Policy, ops ...op) run {
	t.Helper()
	cmd, err := startConfined(t, p, ops...)
	if err != nil {
		t.Fatalf("starting the confined child: %v", err)
	}
	return cmd.wait(t)
}

type confined struct {
	cmd            *exec.Cmd
	cell           *sandbox.Cell
	stdout, stderr strings.Builder
}

// childEnv is p.Env as startConfined completes it.
func childEnv(t *testing.T, p sandbox.Policy, ops ...op) []string {
	b, _ := json.Marshal(ops)
	return append(slices.Clone(p.Env), envOps+"="+string(b), proctest.Env(t), "PATH=/usr/bin:/bin")
}

func startConfined(t *testing.T, p sandbox.Policy, ops ...op) (*confined, error) {
	t.Helper()
	p.Env = childEnv(t, p, ops...)
	c := &confined{cmd: exec.Command(testBinary(t))}
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cell, err := sandbox.Start(ctx, c.cmd, p)
	if err != nil {
		return nil, err
	}
	c.cell = cell
	t.Cleanup(func() { c.stop() })
	return c, nil
}

// stop kills the child if it still runs, and closes its Cell.
func (c *confined) stop() {
	if c.cmd.ProcessState == nil {
		c.cmd.Process.Kill()
		c.cmd.Wait()
	}
	c.cell.Close()
}

func (c *confined) wait(t *testing.T) run {
	t.Helper()
	c.cmd.Wait()
	if err := c.cell.Close(); err != nil {
		t.Errorf("closing the cell: %v", err)
	}
	r := run{state: c.cmd.ProcessState, limit: c.cell.Limit(c.cmd.ProcessState), enf: c.cell.Enforcement(), stderr: c.stderr.String()}
	r.results = parseResults(t, c.stdout.String())
	return r
}

// runPlain runs the child with ops as mcpx runs an unconfined child today:
// the daemon's environment, no limits. The attack tests' control.
func runPlain(t *testing.T, ops ...op) run {
	t.Helper()
	b, _ := json.Marshal(ops)
	cmd := exec.Command(testBinary(t))
	cmd.Env = append(os.Environ(), envOps+"="+string(b), proctest.Env(t))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Run()
	return run{state: cmd.ProcessState, stderr: stderr.String(), results: parseResults(t, stdout.String())}
}

func parseResults(t *testing.T, out string) []result {
	t.Helper()
	var rs []result
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var r result
		if err := dec.Decode(&r); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Errorf("child output: %v\n%s", err, out)
			}
			return rs
		}
		rs = append(rs, r)
	}
}
