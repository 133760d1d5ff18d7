package pool_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/pool"
	"mcpx.dev/mcpx/pool/confine"
	"mcpx.dev/mcpx/pool/proc/egress"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// needSandbox skips (or, with the test dependencies required, fails) where
// this kernel cannot confine a child as Enforce mode needs.
func needSandbox(t testing.TB, spec *confine.Spec) {
	t.Helper()
	p := spec.Policy(confine.Facts{TmpDir: t.TempDir()})
	if _, err := sandbox.Plan(&p, sandbox.Probe()); err != nil {
		if os.Getenv(testenv.RequireDepsEnv) == "1" {
			t.Fatalf("this kernel cannot confine a child: %v", err)
		}
		t.Skipf("this kernel cannot confine a child: %v", err)
	}
}

// probeServer is the demo server with its probing tools (read, write,
// fetch): what a confined child's tests ask it to reach.
func probeServer(t *testing.T, name string) pool.Server {
	return demoServer(t, name, demo.EnvProbe+"=1")
}

// TestSandboxConfinesChild: a confined child reads and writes its root, is
// refused the kernel's way beyond it (the error comes back as the tool's
// own), has its private directory as HOME and none of the daemon's
// environment, and its instance says what confines it. (The writes outside
// its root it once tried here are TestSandboxHostile's write-root-parent
// and write-tmp, in cmd/mcpx.)
func TestSandboxConfinesChild(t *testing.T) {
	root, outside := realDir(t), realDir(t)
	secretFile := filepath.Join(outside, "id_ed25519")
	if err := os.WriteFile(secretFile, []byte("secret key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "mine.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := &confine.Spec{Why: confine.WhyCaller, Write: []string{root}, Network: sandbox.NetworkNone, Limits: confine.DefaultLimits}
	needSandbox(t, spec)
	env := append(os.Environ(), "AWS_SECRET_ACCESS_KEY=s3cr3t")
	p := newPool(t, pool.Options{Env: env}, probeServer(t, "fs"))
	tg := pool.Target{Server: "fs", Key: "worktree:" + root, Root: root, Sandbox: spec}

	if got := mustCall(t, p, tg, "read", map[string]string{"path": filepath.Join(root, "mine.txt")}); got != "mine" {
		t.Errorf("reading its root: %q", got)
	}
	if got := mustCall(t, p, tg, "write", map[string]string{"path": filepath.Join(root, "new.txt"), "text": "x"}); got != "ok" {
		t.Errorf("writing its root: %q", got)
	}
	// One refusal, to see the kernel's error come back as the tool's own;
	// every attempt of a hostile server, each seen succeeding unconfined,
	// is cmd/mcpx's TestSandboxHostile, through a real daemon.
	if _, err := call(t.Context(), p, tg, "read", map[string]string{"path": secretFile}); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("read %s: %v, want the kernel's permission denied as the tool's error", secretFile, err)
	}
	home := mustCall(t, p, tg, "env", map[string]string{"name": "HOME"})
	if got := mustCall(t, p, tg, "env", map[string]string{"name": "TMPDIR"}); got != home || home == "" || home == os.Getenv("HOME") {
		t.Errorf("HOME %q TMPDIR %q, want both the instance's private directory", home, got)
	}
	if got := mustCall(t, p, tg, "env", map[string]string{"name": "AWS_SECRET_ACCESS_KEY"}); got != "" {
		t.Errorf("the daemon's secret reached the confined child: %q", got)
	}
	ins := p.Instances()
	if len(ins) != 1 || ins[0].Sandbox == nil {
		t.Fatalf("instances %+v, want one, confined", ins)
	}
	sb := ins[0].Sandbox
	if sb.Fingerprint != spec.Fingerprint() || sb.Why != confine.WhyCaller || ins[0].TmpDir != home {
		t.Errorf("sandbox status %+v tmpdir %q, want the spec's fingerprint and why, and HOME its tmpdir", sb, ins[0].TmpDir)
	}
	if f, ok := sb.Enforcement.Feature(sandbox.FeatureFilesystem); !ok || !f.Enforced {
		t.Errorf("enforcement %v: the filesystem is not enforced", sb.Enforcement)
	}
}

// TestSandboxIsIdentity: the same key asked confined and unconfined gets
// two instances, two children; two callers with the same Spec share one.
func TestSandboxIsIdentity(t *testing.T) {
	root := realDir(t)
	spec := &confine.Spec{Why: confine.WhyCaller, Write: []string{root}}
	needSandbox(t, spec)
	p := newPool(t, pool.Options{}, demoServer(t, "fs"))
	owner := pool.Target{Server: "fs", Key: "worktree:" + root, Root: root}
	grant := owner
	grant.Sandbox = spec
	again := owner
	again.Sandbox = &confine.Spec{Why: confine.WhyConfig, Write: []string{root}} // the same but for why
	a, b, c := mustCall(t, p, owner, "pid", nil), mustCall(t, p, grant, "pid", nil), mustCall(t, p, again, "pid", nil)
	if a == b {
		t.Errorf("the owner's unconfined child (pid %s) served a confined caller", a)
	}
	if b != c {
		t.Errorf("two callers with the same policy got two children (%s, %s)", b, c)
	}
	if n := len(p.Instances()); n != 2 {
		t.Errorf("%d instances, want 2", n)
	}
	// A restart replaces each instance with one of the same identity: the
	// confined one confined.
	p.Restart(func(string) bool { return true }, "test")
	if d := mustCall(t, p, grant, "pid", nil); d == b || d == a {
		t.Errorf("the confined instance was not replaced (pid %s)", d)
	}
	confined := 0
	for _, in := range p.Instances() {
		if in.Sandbox != nil {
			confined++
		}
	}
	if n := len(p.Instances()); n != 2 || confined != 1 {
		t.Errorf("after a restart: %d instances, %d confined; want 2, 1: %+v", n, confined, p.Instances())
	}
}

// TestSandboxMemoryLimit: a confined child that allocates past its memory
// limit is killed by it, and its call, its status and its crash event say
// which limit.
func TestSandboxMemoryLimit(t *testing.T) {
	spec := &confine.Spec{Why: confine.WhyConfig, Limits: sandbox.Limits{Memory: 64 << 20}}
	needSandbox(t, spec)
	if sandbox.Probe().Memory.Dir == "" {
		t.Skip("no memory cgroup here: RLIMIT_DATA fails the allocation instead of killing the child (the sandbox package's tests)")
	}
	p := newPool(t, pool.Options{}, demoServer(t, "big"))
	tg := pool.Target{Server: "big", Key: "global", Sandbox: spec}
	pid := mustCall(t, p, tg, "pid", nil)
	cg := memoryCgroup(t, pid)
	_, err := call(t.Context(), p, tg, "big", map[string]int{"bytes": 64 << 20}) // the text, and its JSON, and more
	var pe *pool.Error
	if !errors.As(err, &pe) || !errors.Is(err, pool.ErrCrashed) || !strings.Contains(pe.Detail, "limit: memory 64MiB") {
		t.Fatalf("a call past the memory limit: %v, want ErrCrashed naming the limit", err)
	}
	ins := p.Instances()
	if len(ins) != 1 || ins[0].Sandbox == nil || ins[0].Sandbox.Limit != "limit: memory 64MiB" || !strings.Contains(ins[0].LastError, "limit: memory 64MiB") {
		t.Errorf("status after the kill: %+v", ins)
	}
	evs, _, _ := p.Events().Since(0)
	found := false
	for _, ev := range evs {
		found = found || ev.Kind == pool.EventCrash && strings.Contains(ev.Reason, "limit: memory 64MiB")
	}
	if !found {
		t.Errorf("no crash event names the limit: %+v", evs)
	}
	if _, err := os.Stat(cg); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed child's memory cgroup %s is still there: %v", cg, err)
	}
}

// memoryCgroup is the directory of pid's memory cgroup: the sandbox makes
// one per child under its own, named after the child's pid.
func memoryCgroup(t *testing.T, pid string) string {
	t.Helper()
	dir := filepath.Join(sandbox.Probe().Memory.Dir, "mcpx-"+pid)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("the confined child %s has no memory cgroup %s: %v", pid, dir, err)
	}
	return dir
}

// TestSandboxEgress: a confined child with a host list reaches an allowed
// host through the daemon's egress proxy (the proxy's resolver maps the
// test names to a loopback test host), is refused another, with a log
// line naming the server, the instance and the host, and counted; it
// reaches the host directly not at all.
func TestSandboxEgress(t *testing.T) {
	host := testHTTPHost(t)
	_, port, _ := net.SplitHostPort(host)
	spec := &confine.Spec{Why: confine.WhyConfig, Network: sandbox.NetworkProxy, Allow: []string{"allowed.test:" + port}}
	needSandbox(t, spec)
	var logs syncBuffer
	p := newPool(t, pool.Options{Egress: egress.Options{
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
		Resolver: loopbackResolver{},
		Permit:   []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	}}, probeServer(t, "web"))
	tg := pool.Target{Server: "web", Key: "global", Sandbox: spec}

	got, err := call(t.Context(), p, tg, "fetch", map[string]string{"url": "http://allowed.test:" + port + "/hello"})
	if err != nil || !strings.Contains(got, "200 OK") || !strings.Contains(got, "hello from the test host") {
		t.Errorf("fetching an allowed host: %q, %v", got, err)
	}
	_, err = call(t.Context(), p, tg, "fetch", map[string]string{"url": "http://denied.test:" + port + "/"})
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("fetching a host not on the list: %v, want the proxy's 403", err)
	}
	_, err = call(t.Context(), p, tg, "fetch", map[string]string{"url": "http://allowed.test:1/"})
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("fetching the allowed host on another port: %v, want the proxy's 403", err)
	}
	// Go's client never proxies a loopback address: it connects to the
	// child's own loopback, where nothing listens. The host's is out of
	// reach.
	_, err = call(t.Context(), p, tg, "fetch", map[string]string{"url": "http://" + host + "/"})
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("connecting to the test host directly: %v, want connection refused", err)
	}
	inst := p.Instances()[0].ID
	log := logs.String()
	if !strings.Contains(log, "egress refused") || !strings.Contains(log, "server=web") || !strings.Contains(log, "instance="+inst) || !strings.Contains(log, "host=denied.test") {
		t.Errorf("the refusal is not logged with server, instance and host:\n%s", log)
	}
	if c := p.EgressCounts()["web"]; c.Allowed != 1 || c.Refused != 2 {
		t.Errorf("egress counts %+v, want 1 allowed, 2 refused", c)
	}
}

// testHTTPHost serves a page on a loopback address for the test's life:
// 127.0.0.2, which is no interface's own address (the proxy refuses
// those whatever it permits).
func testHTTPHost(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello from the test host")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// loopbackResolver resolves every name ending in .test to 127.0.0.2.
type loopbackResolver struct{}

func (loopbackResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if strings.HasSuffix(host, ".test") {
		return []netip.Addr{netip.MustParseAddr("127.0.0.2")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}
