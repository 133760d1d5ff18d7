package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// The acceptance of containment (issue 32) against a hostile server: a real
// `mcpx serve` with the demo server's probing tools twice, at worktree
// scope in a repository with two worktrees, "jail" with "sandbox" set and
// "open" with "sandbox": false, and a third, "witness", an unconfined
// child of another server. Each attempt is a subtest run twice: off
// (open: the attempt must succeed, or the test could not fail) and on
// (jail: it must fail, and write nothing). After them all, the daemon and
// the witness still serve, and no confined child left a cgroup or a
// network namespace behind (testenv.WatchConfined).

// hostile is the daemon and what its children are pointed at.
type hostile struct {
	d                   *upgradeDaemon
	dir, a, b           string            // the test's directory; worktrees A (the callers') and B
	home, state, secret string            // the daemon's HOME and state directory; a variable of its environment
	token               string            // the daemon's token, as its token file holds it
	loopback, proxyPort string            // a loopback service not given to jail; one on the proxy's port, elsewhere
	unlisted, listed    string            // http hosts: one not on jail's list (a name), one on it (an address)
	witness             int               // the witness child's pid
	confined            map[int]string    // jail's children and their network namespaces
	watch               *testenv.Confined // their cgroups, at the end
	namespaces          []*os.File        // their network namespaces, held open (noteConfined)
}

const (
	jailMemory    = 128 // MiB
	jailProcesses = 64
)

func startHostile(t *testing.T) *hostile {
	t.Helper()
	mcpx, dir, marker := processTest(t)
	probe := sandbox.Policy{Mode: sandbox.Enforce, Network: sandbox.NetworkProxy, Limits: sandbox.Limits{Memory: jailMemory << 20, Processes: jailProcesses, OpenFiles: 1024}}
	if _, err := sandbox.Plan(&probe, sandbox.Probe()); err != nil {
		if os.Getenv(testenv.RequireDepsEnv) == "1" {
			t.Fatalf("this kernel cannot confine a child: %v", err)
		}
		t.Skipf("this kernel cannot confine a child: %v", err)
	}
	k := sandbox.Probe()
	h := &hostile{dir: dir, home: filepath.Join(dir, "home"), state: filepath.Join(dir, "state"), secret: "s3cr3t-" + randHex(t), confined: map[int]string{},
		watch: testenv.WatchConfined(t, k.Memory.Dir, k.Pids.Dir)}
	t.Cleanup(func() {
		for _, f := range h.namespaces {
			f.Close()
		}
	})
	wts := testenv.Worktrees(t, filepath.Join(dir, "repo", "main"), map[string]string{"README": "the repo\n"}, "a", "b")
	h.a, h.b = wts[1], wts[2]
	testenv.WriteFiles(t, h.b, map[string]string{"secret.txt": "worktree b's own"})
	testenv.WriteFiles(t, h.home, map[string]string{".ssh/id_ed25519": "-----BEGIN OPENSSH PRIVATE KEY----- fake"})

	h.loopback = banner(t, "127.0.0.1:0", "a loopback service")
	h.proxyPort = banner(t, randomLoopback(t, sandbox.DefaultProxyPort), "not the proxy")
	_, port, _ := net.SplitHostPort(httpHost(t, "127.0.0.1:0", "the unlisted host"))
	h.unlisted = "http://localhost:" + port + "/"
	listed := httpHost(t, randomLoopback(t, 0), "the listed host")
	h.listed = "http://" + listed + "/"

	child := func(extra map[string]any) map[string]any {
		s := map[string]any{"command": mcpx, "args": []string{"demo-server", "--failure-flags"}, "scope": "worktree",
			"env": map[string]string{proctest.MarkerEnv: proctest.Marker(t), demo.EnvProbe: "1"}}
		for k, v := range extra {
			s[k] = v
		}
		return s
	}
	cfg, _ := json.Marshal(map[string]any{"servers": map[string]any{
		"jail": child(map[string]any{"sandbox": map[string]any{"network": []string{listed},
			"limits": map[string]any{"memory": fmt.Sprintf("%dMiB", jailMemory), "processes": jailProcesses}}}),
		"open":    child(map[string]any{"sandbox": false}),
		"witness": child(map[string]any{"scope": "global"}),
	}})
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), marker, "HOME="+h.home, "MCPX_HOSTILE_SECRET="+h.secret,
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_STATE_HOME="+filepath.Join(dir, "xstate"))
	h.d = startUpgradeDaemon(t, mcpx, dir, cfgPath, env)
	tok, err := os.ReadFile(filepath.Join(h.state, "token"))
	if err != nil || len(tok) < 16 {
		t.Fatalf("the daemon's token file: %q, %v", tok, err)
	}
	h.token = strings.TrimSpace(string(tok))
	pid, err := h.call("witness", "pid", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	h.witness, _ = strconv.Atoi(pid)
	return h
}

// call calls server's tool from worktree A.
func (h *hostile) call(server, tool string, args map[string]any) (string, error) {
	b, _ := json.Marshal(args)
	return callText(h.d.t.Context(), h.d.bc, client.Caller{Cwd: h.a}, server, tool, string(b))
}

// noteConfined records jail's running children and their network
// namespaces, for the check that none outlives its child.
//
// It keeps each namespace open until the test ends: the kernel reuses a
// freed namespace's inode number for the next one made (seen here: a
// child's successor got its ended predecessor's "net:[…]" whenever the
// predecessor's namespace was freed first), so only a namespace held open
// keeps its name its own for the check that the daemon holds nothing in it.
func (h *hostile) noteConfined(t *testing.T) {
	for _, in := range h.d.instances() {
		if in.Server != "jail" || in.Pid == 0 || in.Sandbox == nil {
			continue
		}
		if _, seen := h.confined[in.Pid]; seen {
			continue
		}
		ns, f, err := testenv.HoldNetNS(in.Pid)
		if err != nil {
			continue // it has ended
		}
		h.namespaces = append(h.namespaces, f)
		h.confined[in.Pid] = ns
		h.watch.Note(in.Pid)
	}
}

// attempt is one thing a hostile server tries.
type attempt struct {
	name, tool string
	// args are the tool's arguments; variant is "off" or "on", for paths
	// that each must write apart.
	args func(h *hostile, variant string) map[string]any
	// reached is what the result says when the attempt succeeded;
	// refused what the refusal says (the kernel's error, the proxy's 403,
	// the limit), so that a child that merely broke does not pass.
	reached func(h *hostile) string
	refused string
	// written are the paths the attempt would create.
	written func(h *hostile, variant string) []string
}

func arg(k string, v func(h *hostile, variant string) any) func(*hostile, string) map[string]any {
	return func(h *hostile, variant string) map[string]any { return map[string]any{k: v(h, variant)} }
}

func fixed(s string) func(*hostile) string { return func(*hostile) string { return s } }

// SIGURG: a real signal every Go program (the daemon, the witness) takes
// in its stride.
const harmless = int(syscall.SIGURG)

var attempts = []attempt{
	{name: "read-other-worktree", refused: "permission denied", tool: "read",
		args:    arg("path", func(h *hostile, _ string) any { return filepath.Join(h.b, "secret.txt") }),
		reached: fixed("worktree b's own")},
	{name: "read-ssh-key", refused: "permission denied", tool: "read",
		args:    arg("path", func(h *hostile, _ string) any { return filepath.Join(h.home, ".ssh", "id_ed25519") }),
		reached: fixed("PRIVATE KEY")},
	{name: "list-state-dir", refused: "permission denied", tool: "list",
		args:    arg("path", func(h *hostile, _ string) any { return h.state }),
		reached: fixed("token")},
	{name: "read-token", refused: "permission denied", tool: "read",
		args:    arg("path", func(h *hostile, _ string) any { return filepath.Join(h.state, "token") }),
		reached: func(h *hostile) string { return h.token }},
	{name: "write-root-parent", refused: "permission denied", tool: "write",
		args: func(h *hostile, v string) map[string]any {
			return map[string]any{"path": filepath.Join(filepath.Dir(h.a), "planted-"+v), "text": "x"}
		},
		reached: fixed("ok"),
		written: func(h *hostile, v string) []string { return []string{filepath.Join(filepath.Dir(h.a), "planted-"+v)} }},
	{name: "write-tmp", refused: "permission denied", tool: "write",
		args: func(h *hostile, v string) map[string]any {
			return map[string]any{"path": filepath.Join(os.TempDir(), "mcpx-hostile-"+filepath.Base(h.dir)+"-"+v), "text": "x"}
		},
		reached: fixed("ok"),
		written: func(h *hostile, v string) []string {
			return []string{filepath.Join(os.TempDir(), "mcpx-hostile-"+filepath.Base(h.dir)+"-"+v)}
		}},
	// The unconfined child's environment is already cut to an allowlist
	// (pool's TestChildGetsACleanEnvironment), so the way to the daemon's
	// variables is its /proc entry.
	{name: "read-daemon-environment", refused: "permission denied", tool: "read",
		args:    arg("path", func(h *hostile, _ string) any { return fmt.Sprintf("/proc/%d/environ", h.d.cmd.Process.Pid) }),
		reached: func(h *hostile) string { return h.secret }},
	{name: "connect-loopback-port", refused: "connection refused", tool: "connect",
		args:    arg("addr", func(h *hostile, _ string) any { return h.loopback }),
		reached: fixed("a loopback service")},
	{name: "connect-proxy-port-elsewhere", refused: "connection refused", tool: "connect",
		args:    arg("addr", func(h *hostile, _ string) any { return h.proxyPort }),
		reached: fixed("not the proxy")},
	// Off, the child has no proxy and reaches the host directly; on, its
	// one way out is the proxy, which refuses a host not on its list.
	{name: "unlisted-host-through-proxy", refused: "403 Forbidden", tool: "fetch",
		args:    func(h *hostile, _ string) map[string]any { return map[string]any{"url": h.unlisted, "viaProxy": true} },
		reached: fixed("the unlisted host")},
	// A limit cannot be exceeded unconfined, having none: off shows the
	// child going past the same amount that on must refuse.
	{name: "fork-past-process-limit", refused: "resource temporarily unavailable", tool: "spawn",
		args:    arg("count", func(*hostile, string) any { return 2 * jailProcesses }),
		reached: fixed(fmt.Sprintf("started %d", 2*jailProcesses))},
	{name: "alloc-past-memory-limit", refused: "limit: memory 128MiB", tool: "alloc",
		args:    arg("mib", func(*hostile, string) any { return 2 * jailMemory }),
		reached: fixed(fmt.Sprintf("allocated %d MiB", 2*jailMemory))},
	{name: "signal-daemon", refused: "operation not permitted", tool: "signal",
		args: func(h *hostile, _ string) map[string]any {
			return map[string]any{"pid": h.d.cmd.Process.Pid, "signal": harmless}
		},
		reached: fixed("ok")},
	{name: "signal-other-child", refused: "operation not permitted", tool: "signal",
		args:    func(h *hostile, _ string) map[string]any { return map[string]any{"pid": h.witness, "signal": harmless} },
		reached: fixed("ok")},
	{name: "ptrace-daemon", refused: "operation not permitted", tool: "ptrace",
		args:    arg("pid", func(h *hostile, _ string) any { return h.d.cmd.Process.Pid }),
		reached: fixed("attached")},
	{name: "ptrace-other-child", refused: "operation not permitted", tool: "ptrace",
		args:    arg("pid", func(h *hostile, _ string) any { return h.witness }),
		reached: fixed("attached")},
}

// TestSandboxHostile: every attempt of a hostile server succeeds
// unconfined and fails confined, writing nothing; the daemon and the
// other child keep serving; the proxy that refused the unlisted host
// logged it and lets the listed one through; no confined child leaves a
// cgroup or a network namespace behind.
func TestSandboxHostile(t *testing.T) {
	t.Parallel()
	h := startHostile(t)
	for _, a := range attempts {
		t.Run(a.name, func(t *testing.T) {
			t.Run("off", func(t *testing.T) {
				for _, p := range written(h, a, "off") {
					t.Cleanup(func() { os.Remove(p) })
				}
				got, err := h.call("open", a.tool, a.args(h, "off"))
				if want := a.reached(h); err != nil || !strings.Contains(got, want) {
					t.Fatalf("unconfined, %s %v: %q, %v; want it to succeed (%q), or this test cannot fail", a.tool, a.args(h, "off"), got, err, want)
				}
			})
			t.Run("on", func(t *testing.T) {
				h.noteConfined(t)
				got, err := h.call("jail", a.tool, a.args(h, "on"))
				h.noteConfined(t)
				if err == nil || strings.Contains(got+err.Error(), a.reached(h)) || !strings.Contains(err.Error(), a.refused) {
					t.Errorf("confined, %s %v: %q, %v; want it refused (%q)", a.tool, a.args(h, "on"), got, err, a.refused)
				}
				for _, p := range written(h, a, "on") {
					if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("confined, %s wrote %s (%v)", a.tool, p, err)
						os.Remove(p)
					}
				}
			})
		})
	}
	t.Run("proxy", func(t *testing.T) {
		if got, err := h.call("jail", "fetch", map[string]any{"url": h.listed, "viaProxy": true}); err != nil || !strings.Contains(got, "the listed host") {
			t.Errorf("confined, the listed host through the proxy: %q, %v", got, err)
		}
		if logs := h.d.logs.String(); !strings.Contains(logs, "egress refused") || !strings.Contains(logs, "server=jail") || !strings.Contains(logs, "host=localhost") {
			t.Errorf("the proxy's refusal is not logged with the server and the host:\n%s", logs)
		}
	})
	t.Run("still-serving", func(t *testing.T) {
		if pid, err := h.call("witness", "pid", map[string]any{}); err != nil || pid != strconv.Itoa(h.witness) {
			t.Errorf("the witness: pid %q, %v; want %d, serving", pid, err, h.witness)
		}
		for _, s := range []string{"jail", "open"} {
			if got, err := h.call(s, "echo", map[string]any{"message": "still here"}); err != nil || got != "still here" {
				t.Errorf("%s after the attempts: %q, %v", s, got, err)
			}
		}
		h.noteConfined(t)
		if len(h.confined) < 2 {
			t.Errorf("confined children seen: %v; want the one the memory limit ended and its successor", h.confined)
		}
		checkNamespacesGone(t, h)
	})
	if out, err := h.d.cli("daemon", "stop", "--broker", h.d.sock); err != nil {
		t.Errorf("daemon stop: %v: %s", err, out)
	}
	h.d.waitExit() // the watch checks the cgroups at the end
}

func written(h *hostile, a attempt, variant string) []string {
	if a.written == nil {
		return nil
	}
	return a.written(h, variant)
}

// checkNamespacesGone: the network namespace of every confined child that
// has ended is held by nothing of the daemon's (its egress listener is
// closed), so that it goes once the test lets go of it; the running one's
// is (its listener).
//
// A child that has just ended may still have its listener open while the
// daemon handles its exit: the check waits for that, bounded.
func checkNamespacesGone(t *testing.T, h *hostile) {
	t.Helper()
	held := testenv.SocketNamespaces(t, h.d.cmd.Process.Pid)
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		stale := false
		for pid, ns := range h.confined {
			stale = stale || (!running(pid) && held[ns])
		}
		if !stale {
			break
		}
		held = testenv.SocketNamespaces(t, h.d.cmd.Process.Pid)
	}
	for pid, ns := range h.confined {
		switch alive := running(pid); {
		case !alive && held[ns]:
			t.Errorf("the daemon still holds a socket in %s, the network namespace of the ended child %d: %q",
				ns, pid, testenv.SocketsIn(t, h.d.cmd.Process.Pid, ns))
		case alive && !held[ns]:
			// The running child's egress listener is the daemon's: were
			// it not seen, this check could not fail.
			t.Errorf("the daemon holds no socket in %s, the network namespace of the running child %d: %v", ns, pid, held)
		}
	}
}

// banner listens on addr and writes msg to each connection; it returns the
// address.
func banner(t *testing.T, addr, msg string) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, msg)
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// httpHost serves msg on addr until the test ends; it returns the address.
func httpHost(t *testing.T, addr, msg string) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, msg) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// randomLoopback is a free host:port on a random 127.x.y.z address other
// than 127.0.0.1 (no interface's own, which the proxy never reaches), with
// port (0: any).
func randomLoopback(t *testing.T, port int) string {
	t.Helper()
	for range 20 {
		addr := net.JoinHostPort(fmt.Sprintf("127.%d.%d.%d", 1+mrand.IntN(250), mrand.IntN(250), 1+mrand.IntN(250)), strconv.Itoa(port))
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			ln.Close()
			return addr
		}
	}
	t.Fatalf("no free loopback address for port %d", port)
	return ""
}

func randHex(t *testing.T) string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
