package testenv

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// GitRevParse asks the git CLI what it thinks of dir: the worktree's top
// level and the repository's common dir, canonical, "" where git has no
// answer (outside a repository, or in one without a worktree). env is added
// to GitEnv, such as GIT_CEILING_DIRECTORIES=... Native git discovery must
// agree with it without running git.
func GitRevParse(t testing.TB, dir string, env ...string) (top, common string) {
	t.Helper()
	run := func(args ...string) string {
		cmd := exec.Command(Git(t), args...)
		cmd.Dir = dir
		cmd.Env = append(GitEnv(t), env...)
		out, err := cmd.Output()
		if err != nil {
			return ""
		}
		p := strings.TrimRight(string(out), "\n")
		c, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatalf("git rev-parse %v in %s printed %q: %v", args, dir, p, err)
		}
		return c
	}
	return run("rev-parse", "--show-toplevel"), run("rev-parse", "--path-format=absolute", "--git-common-dir")
}
