package pool_test

import (
	"cmp"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/pool"
	"mcpx.dev/mcpx/pool/confine"
	"mcpx.dev/mcpx/pool/proc/egress"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// envConfined, set to the address of a test HTTP host ("127.0.0.2:port"),
// makes the stand-in daemons of the upgrade and survive tests run their
// child confined, with that host's port allowed as allowed.test through
// the egress proxy.
const envConfined = "MCPX_TEST_CONFINED"

// standInTarget is the stand-in daemons' target: confined with
// envConfined.
func standInTarget() pool.Target {
	return pool.Target{Server: "demo", Key: "global", Sandbox: confinedSpec()}
}

// confinedSpec is what confines the stand-ins' child under envConfined;
// nil without.
func confinedSpec() *confine.Spec {
	host := os.Getenv(envConfined)
	if host == "" {
		return nil
	}
	_, port, _ := net.SplitHostPort(host)
	return &confine.Spec{Why: confine.WhyConfig, Network: sandbox.NetworkProxy, Allow: []string{"allowed.test:" + port}, Limits: confine.DefaultLimits}
}

// confinedDef is the demo server with its probing tools, as the
// stand-ins run it confined.
func confinedDef(marker string) pool.Server {
	return surviveDef(marker, demo.EnvProbe, "1", envConfined, "")
}

// standInEgress is the stand-ins' egress proxy: allowed.test is the test
// host.
func standInEgress() egress.Options {
	return egress.Options{Resolver: loopbackResolver{}, Permit: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
}

// stillConfined checks the adopted instance of before: the same child,
// the same policy, its way out through the proxy served again, its
// boundary still the kernel's.
func stillConfined(t *testing.T, p *pool.Pool, before pool.InstanceStatus) {
	t.Helper()
	after := statusOf(t, p, "global")
	if after.Pid != before.Pid || after.Sandbox == nil || before.Sandbox == nil || after.Sandbox.Fingerprint != before.Sandbox.Fingerprint {
		t.Fatalf("adopted %+v (sandbox %+v); want pid %d and the policy %+v", after, after.Sandbox, before.Pid, before.Sandbox)
	}
	if f, ok := after.Sandbox.Enforcement.Feature(sandbox.FeatureNetwork); !ok || !f.Enforced {
		t.Errorf("the adopted instance's enforcement %v lost its network namespace", after.Sandbox.Enforcement)
	}
	_, port, _ := net.SplitHostPort(os.Getenv(envConfined))
	tg := standInTarget()
	if got, err := call(t.Context(), p, tg, "fetch", map[string]string{"url": "http://allowed.test:" + port + "/"}); err != nil || !strings.Contains(got, "hello from the test host") {
		t.Errorf("the adopted child's egress: %q, %v; want the test host through the proxy", got, err)
	}
	if _, err := call(t.Context(), p, tg, "fetch", map[string]string{"url": "http://denied.test:" + port + "/"}); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("the adopted child reached a host not on its list: %v", err)
	}
	secret := filepath.Join(cmp.Or(os.Getenv(envUpgradeDir), os.Getenv(envSurviveDir)), "state")
	if _, err := call(t.Context(), p, tg, "read", map[string]string{"path": secret}); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("the adopted child read the daemon's state directory: %v", err)
	}
}

// TestUpgradeKeepsAConfinedChildConfined: an upgrade in place hands a
// confined child over with its policy and its egress listener: the new
// image has the same child, confined the same, reaching its host through
// the proxy again.
func TestUpgradeKeepsAConfinedChildConfined(t *testing.T) {
	if os.Getenv(envUpgraded) != "" {
		proctest.CheckNoLeaks(t)
		p, res, before := upgraded(t, false)
		if len(res.Adopted) != 1 || len(res.Replaced) != 0 {
			t.Fatalf("adopted %v, replaced %v; want one adopted", res.Adopted, res.Replaced)
		}
		stillConfined(t, p, before)
		return
	}
	needSandbox(t, &confine.Spec{Network: sandbox.NetworkProxy})
	proctest.CheckNoLeaks(t)
	_, before := upgradeWithAChild(t, envConfined+"="+testHTTPHost(t))
	if before.Sandbox == nil {
		t.Fatalf("the child before the upgrade was not confined: %+v", before)
	}
	waitGone(t, before.Pid)
}

// TestSurviveKeepsAConfinedChildConfined: a confined child outlives its
// killed daemon with its egress listener (the keeper holds it with the
// pipes), and the next daemon adopts it confined as it was.
func TestSurviveKeepsAConfinedChildConfined(t *testing.T) {
	needSandbox(t, &confine.Spec{Network: sandbox.NetworkProxy})
	proctest.CheckNoLeaks(t)
	t.Setenv(envConfined, testHTTPHost(t))
	dir, child := killedWithAChild(t, true, envConfined+"="+os.Getenv(envConfined))
	if !alive(child) {
		t.Fatalf("the confined child %d died with its daemon", child)
	}
	t.Setenv(envSurviveDir, dir)
	p, res := nextDaemon(t, dir, true, confinedDef(proctest.Marker(t)))
	if len(res.Adopted) != 1 || len(res.Replaced) != 0 {
		t.Fatalf("adopted %v, replaced %v; want one adopted", res.Adopted, res.Replaced)
	}
	st := statusOf(t, p, "global")
	if st.Pid != child {
		t.Fatalf("adopted pid %d, want %d", st.Pid, child)
	}
	stillConfined(t, p, pool.InstanceStatus{Pid: child, Sandbox: &pool.SandboxStatus{Fingerprint: confinedSpec().Fingerprint()}})
}
