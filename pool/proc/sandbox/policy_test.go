package sandbox_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

func basePolicy() sandbox.Policy {
	return sandbox.Policy{
		Read:  []string{"/usr", "/etc/ssl"},
		Write: []string{"/work/a", "/tmp/mcpx-1"},
		Env:   []string{"PATH=/usr/bin", "HOME=/tmp/mcpx-1"},
	}
}

// TestValidate: each mistake is named by its field, with the fix.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*sandbox.Policy)
		want string
	}{
		{"relative", func(p *sandbox.Policy) { p.Read = append(p.Read, "work/b") }, `read[2] "work/b" is not absolute`},
		{"unclean", func(p *sandbox.Policy) { p.Write[1] = "/tmp/../etc" }, `write[1] "/tmp/../etc" is not clean: use "/etc"`},
		{"network", func(p *sandbox.Policy) { p.Network = "internet" }, `network "internet" is not one of none, proxy, loopback, all`},
		{"mode", func(p *sandbox.Policy) { p.Mode = "strict" }, `mode "strict" is not one of enforce, best-effort`},
		{"env form", func(p *sandbox.Policy) { p.Env = append(p.Env, "JUSTAKEY") }, `env[2] "JUSTAKEY" is not KEY=value`},
		{"env twice", func(p *sandbox.Policy) { p.Env = append(p.Env, "PATH=/bin") }, `env sets PATH twice`},
		{"env helper", func(p *sandbox.Policy) { p.Env = append(p.Env, "MCPX_SANDBOX_HELPER=3") }, `env sets MCPX_SANDBOX_HELPER, which the sandbox's own helper reads`},
		{"env helper's namespaces", func(p *sandbox.Policy) { p.Env = append(p.Env, "MCPX_SANDBOX_UNSHARE=ipc") }, `env sets MCPX_SANDBOX_UNSHARE, which the sandbox's own helper reads`},
		{"env helper's stage", func(p *sandbox.Policy) { p.Env = append(p.Env, "MCPX_SANDBOX_GO_STAGE=1") }, `env sets MCPX_SANDBOX_GO_STAGE, which the sandbox's own helper reads`},
		{"memory", func(p *sandbox.Policy) { p.Limits.Memory = -1 }, `limits.memory -1 is negative`},
		{"cpu", func(p *sandbox.Policy) { p.Limits.CPU = -time.Second }, `limits.cpu -1s is negative`},
	} {
		p := basePolicy()
		tc.edit(&p)
		err := p.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
	p := basePolicy()
	if err := p.Validate(); err != nil {
		t.Errorf("a good policy: %v", err)
	}
}

// TestFingerprint: the same for policies that mean the same, different
// for any change in what the child may do.
func TestFingerprint(t *testing.T) {
	base := basePolicy().Fingerprint()
	same := []func(*sandbox.Policy){
		func(p *sandbox.Policy) { p.Read = []string{"/etc/ssl", "/usr", "/usr"} },
		func(p *sandbox.Policy) { p.Env = []string{"HOME=/tmp/mcpx-1", "PATH=/usr/bin"} },
		func(p *sandbox.Policy) { p.Network, p.Mode = sandbox.NetworkNone, sandbox.Enforce },
		func(p *sandbox.Policy) { p.ProxyPort, p.ConnectTCP = 8080, []uint16{443} }, // ignored under NetworkNone
	}
	for i, edit := range same {
		p := basePolicy()
		edit(&p)
		if got := p.Fingerprint(); got != base {
			t.Errorf("same meaning %d: fingerprint %s, want %s", i, got, base)
		}
	}
	different := []func(*sandbox.Policy){
		func(p *sandbox.Policy) { p.Read = append(p.Read, "/home") },
		func(p *sandbox.Policy) { p.Write = p.Write[:1] },
		func(p *sandbox.Policy) { p.Env[0] = "PATH=/bin" },
		func(p *sandbox.Policy) { p.Network = sandbox.NetworkAll },
		func(p *sandbox.Policy) { p.Network = sandbox.NetworkProxy },
		func(p *sandbox.Policy) { p.Network, p.ConnectTCP = sandbox.NetworkLoopback, []uint16{5432} },
		func(p *sandbox.Policy) { p.Limits.Memory = 1 << 30 },
		func(p *sandbox.Policy) { p.Limits.CPU = time.Minute },
		func(p *sandbox.Policy) { p.Mode = sandbox.BestEffort },
		func(p *sandbox.Policy) { p.UnixSockets = true },
	}
	seen := map[string]int{base: -1}
	for i, edit := range different {
		p := basePolicy()
		edit(&p)
		got := p.Fingerprint()
		if j, dup := seen[got]; dup {
			t.Errorf("change %d: fingerprint %s, the same as %d's", i, got, j)
		}
		seen[got] = i
	}
	pa, pb := basePolicy(), basePolicy()
	pa.Network, pb.Network = sandbox.NetworkProxy, sandbox.NetworkProxy
	pb.ProxyPort = sandbox.DefaultProxyPort
	if pa.Fingerprint() != pb.Fingerprint() {
		t.Error("ProxyPort 0 and DefaultProxyPort differ")
	}
}

// TestPolicyJSON: a policy survives the trip to the helper and into the
// hand-over state.
func TestPolicyJSON(t *testing.T) {
	p := basePolicy()
	p.Network, p.ConnectTCP, p.BindTCP = sandbox.NetworkLoopback, []uint16{5432}, []uint16{8080}
	p.Limits = sandbox.Limits{Memory: 1 << 30, Processes: 256, OpenFiles: 1024, CPU: 10 * time.Minute}
	p.Mode, p.UnixSockets = sandbox.BestEffort, true
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var q sandbox.Policy
	if err := json.Unmarshal(b, &q); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(p, q); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
}

// kernels for TestPlan.
var (
	fullKernel = sandbox.Kernel{OS: "linux", Landlock: 7, Namespaces: true, Root: true,
		Memory: sandbox.CgroupDir{Dir: "/sys/fs/cgroup/memory/x", Version: 1}, Pids: sandbox.CgroupDir{Dir: "/sys/fs/cgroup/pids", Version: 1}}
	bareKernel = sandbox.Kernel{OS: "linux", LandlockWhy: "no Landlock here", NamespacesWhy: "no namespaces here", CgroupWhy: "no cgroups here"}
)

// TestPlan: what Enforce refuses for, per kernel, naming the feature and
// the kernel's lack; BestEffort starts and reports the same.
func TestPlan(t *testing.T) {
	limits := sandbox.Limits{Memory: 1 << 30, Processes: 256, OpenFiles: 1024, CPU: time.Minute}
	with := func(k sandbox.Kernel, f func(*sandbox.Kernel)) sandbox.Kernel { f(&k); return k }
	for _, tc := range []struct {
		name    string
		kernel  sandbox.Kernel
		network sandbox.Network
		missing []string
		says    string // in the error
	}{
		{"full", fullKernel, sandbox.NetworkNone, nil, ""},
		{"full, proxy", fullKernel, sandbox.NetworkProxy, nil, ""},
		{"bare", bareKernel, sandbox.NetworkNone, []string{"filesystem", "network", "ipc", "user-namespace"}, "no Landlock here"},
		{"no signal scoping", with(fullKernel, func(k *sandbox.Kernel) { k.Landlock = 5 }), sandbox.NetworkNone, []string{"ipc"}, "need Landlock ABI 6; this kernel has 5"},
		{"no tcp rules", with(fullKernel, func(k *sandbox.Kernel) { k.Landlock = 3 }), sandbox.NetworkLoopback, []string{"network", "ipc"}, "TCP rules need Landlock ABI 4"},
		{"root without pids cgroup", with(fullKernel, func(k *sandbox.Kernel) { k.Pids = sandbox.CgroupDir{} }), sandbox.NetworkNone, []string{"processes"}, "RLIMIT_NPROC does not bind uid 0"},
		{"user without pids cgroup", with(fullKernel, func(k *sandbox.Kernel) { k.Pids, k.Root = sandbox.CgroupDir{}, false }), sandbox.NetworkNone, nil, ""},
		{"no namespaces, host network", with(fullKernel, func(k *sandbox.Kernel) { k.Namespaces, k.NamespacesWhy = false, "userns off" }), sandbox.NetworkAll, []string{"user-namespace"}, "userns off"},
		{"darwin", sandbox.Kernel{OS: "darwin"}, sandbox.NetworkNone, []string{"filesystem", "network", "ipc", "user-namespace", "memory", "processes", "open-files", "cpu"}, "Linux-only"},
	} {
		p := basePolicy()
		p.Network, p.Limits = tc.network, limits
		enf, err := sandbox.Plan(&p, tc.kernel)
		var got []string
		for _, f := range enf.Missing() {
			got = append(got, f.Name)
		}
		if d := cmp.Diff(tc.missing, got); d != "" {
			t.Errorf("%s: missing (-want +got):\n%s\n%s", tc.name, d, enf)
		}
		var ne *sandbox.NotEnforcedError
		switch {
		case tc.missing == nil && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.missing != nil && (!errors.As(err, &ne) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), `"best-effort"`)):
			t.Errorf("%s: error %v; want a NotEnforcedError saying %q and how to start anyway", tc.name, err, tc.says)
		}
		p.Mode = sandbox.BestEffort
		if best, err := sandbox.Plan(&p, tc.kernel); err != nil || len(best.Missing()) != len(tc.missing) {
			t.Errorf("%s, best effort: %v, missing %v", tc.name, err, best.Missing())
		}
	}
}

// TestPlanMemoryFallback: without a memory cgroup the memory limit is
// RLIMIT_DATA, and the Enforcement says so and why.
func TestPlanMemoryFallback(t *testing.T) {
	p := basePolicy()
	p.Limits.Memory = 1 << 30
	k := fullKernel
	k.Memory, k.CgroupWhy = sandbox.CgroupDir{}, "memory: not delegated"
	enf, err := sandbox.Plan(&p, k)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := enf.Feature(sandbox.FeatureMemory)
	if !f.Enforced || f.By != "RLIMIT_DATA per process" || !strings.Contains(f.Why, "memory: not delegated") {
		t.Errorf("%v", f)
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{1 << 30: "1GiB", 64 << 20: "64MiB", 1536 << 10: "1536KiB", 1500: "1500B", 3 << 40: "3TiB"} {
		if got := sandbox.FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestReport: what `mcpx doctor` shows of a kernel: every feature, none
// "needed" (no policy asks), and the reason for what is missing.
func TestReport(t *testing.T) {
	got := map[string]sandbox.Feature{}
	for _, f := range bareKernel.Report() {
		got[f.Name] = f
		if f.Needed {
			t.Errorf("%s: needed in a report", f.Name)
		}
	}
	for _, name := range []string{"filesystem", "network", "network (host, by port)", "ipc", "unix-sockets", "user-namespace", "memory", "processes"} {
		if _, ok := got[name]; !ok {
			t.Errorf("no %s in the report", name)
		}
	}
	if f := got["filesystem"]; f.Enforced || f.Why != "no Landlock here" {
		t.Errorf("bare kernel: %v", f)
	}
	if f := got["memory"]; !f.Enforced || !strings.HasPrefix(f.By, "RLIMIT_DATA") {
		t.Errorf("bare kernel: %v", f)
	}
	if r := (sandbox.Kernel{OS: "darwin"}).Report(); len(r) != 1 || !strings.Contains(r[0].Why, "Linux-only") {
		t.Errorf("darwin: %v", r)
	}
	t.Logf("this kernel: %v", sandbox.Probe())
	for _, f := range sandbox.Probe().Report() {
		t.Logf("  %v", f)
	}
}
