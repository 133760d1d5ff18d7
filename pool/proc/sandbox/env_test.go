//go:build linux

package sandbox_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"mcpx.dev/mcpx/internal/testing/proctest"
)

// TestEnvironment: a confined child's environment is exactly the policy's,
// and it cannot read the daemon's from /proc (Landlock confines ptrace
// access, which /proc/PID/environ needs), though it can read the daemon's
// command line there. Unconfined it inherits the daemon's secret, and reads
// the environment the daemon started with.
func TestEnvironment(t *testing.T) {
	proctest.CheckNoLeaks(t)
	f := newFixture(t)
	t.Setenv("MCPX_TEST_SECRET", "hunter2")
	environ := fmt.Sprintf("/proc/%d/environ", os.Getpid())
	cmdline := fmt.Sprintf("/proc/%d/cmdline", os.Getpid())
	ops := []op{{"env", ""}, {"read", environ}, {"read", cmdline}}
	t.Run("off", func(t *testing.T) {
		r := runPlain(t, ops...)
		if env := r.get(t, "env").Out; !strings.Contains(env, "MCPX_TEST_SECRET=hunter2") {
			t.Errorf("unconfined child's environment lacks the daemon's secret:\n%s", env)
		}
		wantOK(t, r, "read"+environ) // what the daemon started with

	})
	t.Run("on", func(t *testing.T) {
		requireKernel(t, 1, false)
		r := runConfined(t, f.policy, ops...)
		got := strings.Split(r.get(t, "env").Out, "\n")
		want := childEnv(t, f.policy, ops...)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("confined child's environment:\n%s\nwant exactly the policy's:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		wantErr(t, r, "read"+environ, syscall.EACCES)
		wantOK(t, r, "read"+cmdline) // what /proc shows anyone (the package doc says so)
	})
}
