//go:build linux

package sandbox_test

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// TestStartErrors: a child that cannot start says why, and leaves nothing
// running.
func TestStartErrors(t *testing.T) {
	proctest.CheckNoLeaks(t)
	requireKernel(t, 1, false)
	f := newFixture(t)
	unreadable := f.policy
	unreadable.Read = slices.DeleteFunc(slices.Clone(f.policy.Read), func(p string) bool { return p == f.testBin })
	for _, tc := range []struct {
		name string
		cmd  *exec.Cmd
		p    sandbox.Policy
		want string
	}{
		{"not readable", exec.Command(f.testBin), unreadable, "permission denied (is it under the policy's read or write paths?)"},
		{"missing", exec.Command("/nonexistent/server"), f.policy, "starting /nonexistent/server: no such file or directory"},
		{"env", func() *exec.Cmd { c := exec.Command(f.testBin); c.Env = []string{"X=1"}; return c }(), f.policy, "cmd.Env differs from the policy's env"},
		{"policy", exec.Command(f.testBin), sandbox.Policy{Read: []string{"relative"}}, `read[0] "relative" is not absolute`},
	} {
		tc.p.Env = append(slices.Clone(tc.p.Env), proctest.Env(t))
		if tc.cmd.Env != nil {
			tc.cmd.Env = append(tc.cmd.Env, proctest.Env(t))
		}
		_, err := sandbox.Start(context.Background(), tc.cmd, tc.p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
}

// TestStartStageFails: when the unshare the helper starts through fails
// (as unshare does when the namespaces cannot be made: it exits 1), the
// start fails naming it, and nothing is left running.
func TestStartStageFails(t *testing.T) {
	proctest.CheckNoLeaks(t)
	requireKernel(t, 1, true)
	f := newFixture(t)
	sandbox.WithNamespaceStage(t, "/bin/false")
	p := f.policy
	p.Env = append(slices.Clone(p.Env), proctest.Env(t))
	_, err := sandbox.Start(context.Background(), exec.Command(f.testBin), p)
	if err == nil || !strings.Contains(err.Error(), "started through /bin/false") {
		t.Errorf("Start through a failing unshare: %v; want an error naming it", err)
	}
}
