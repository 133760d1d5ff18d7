package sandbox_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// TestCloneIntoCgroup: a child's cgroup v2 is made before the child, which
// is cloned into it (CLONE_INTO_CGROUP) and never moved; Close removes it.
// Where Probe found no v2 cgroup with controllers (a v1 host, as this
// VM), the daemon's own cgroup in the v2 hierarchy stands in, without
// limits: the clone is what is tested. A v2 cgroup that cannot be made
// leaves the child without it, and Enforce refuses a limit it held.
func TestCloneIntoCgroup(t *testing.T) {
	proctest.CheckNoLeaks(t)
	requireKernel(t, 1, false)
	f := newFixture(t)
	p := f.policy
	p.Limits = sandbox.Limits{}
	if f.kernel.Pids.Version != 2 {
		dir := sandbox.OwnCgroupV2()
		if dir == "" || unix.Access(dir, unix.W_OK) != nil {
			t.Skipf("no writable cgroup v2 directory here (own: %q)", dir)
		}
		sandbox.WithKernel(t, func(k *sandbox.Kernel) { k.Pids = sandbox.CgroupDir{Dir: dir, Version: 2} })
	}
	k := sandbox.Probe()

	// Each way the helper starts: the C stage; the Go helper through
	// unshare; the Go helper cloned into its namespaces (clone3 with
	// CLONE_NEWUSER and CLONE_INTO_CGROUP at once).
	for _, stage := range []string{"c", "go", "go-cloned"} {
		t.Run(stage, func(t *testing.T) {
			switch stage {
			case "go":
				sandbox.WithGoStage(t)
			case "go-cloned":
				sandbox.WithNamespaceStage(t, "")
			}
			c, err := startConfined(t, p, op{"read", "/proc/self/cgroup"})
			if err != nil {
				t.Fatal(err)
			}
			res := c.wait(t).get(t, "read/proc/self/cgroup")
			m := regexp.MustCompile(`(?m)^0::(/.*)$`).FindStringSubmatch(res.Out)
			if m == nil {
				t.Fatalf("the child's /proc/self/cgroup has no v2 line: %q (%s)", res.Out, res.Err)
			}
			name := filepath.Base(m[1])
			if !regexp.MustCompile(`^mcpx-[0-9]+-[A-Z2-7]{8}-[0-9]+$`).MatchString(name) {
				t.Errorf("the child's v2 cgroup is %q; want a mcpx-<daemon pid>-<token>-<n> under %s", m[1], k.Pids.Dir)
			}
			if _, err := os.Stat(filepath.Join(k.Pids.Dir, name)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the child's cgroup %s after Close: %v; want it gone", name, err)
			}
		})
	}

	// One that cannot be made: the child starts without it.
	sandbox.WithKernel(t, func(k *sandbox.Kernel) {
		k.Pids = sandbox.CgroupDir{Dir: filepath.Join(f.dir, "no-such-cgroup"), Version: 2}
	})
	r := runConfined(t, p, op{"read", "/proc/self/cgroup"})
	if out := r.get(t, "read/proc/self/cgroup").Out; strings.Contains(out, "mcpx-") && regexp.MustCompile(`(?m)^0::.*mcpx-[0-9]+-`).MatchString(out) {
		t.Errorf("without its v2 cgroup the child is in %q", out)
	}
	if f.kernel.Root {
		p.Limits.Processes = 16
		_, err := startConfined(t, p, op{"forks", "1"})
		var ne *sandbox.NotEnforcedError
		if !errors.As(err, &ne) || !strings.Contains(err.Error(), "processes") {
			t.Errorf("Enforce, a process limit, its v2 cgroup not made, as root: %v; want a NotEnforcedError naming processes", err)
		}
	}
}
