package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// gitHomes holds one empty HOME per test, so git reads no user config.
var gitHomes sync.Map // testing.TB -> string

func gitHome(t testing.TB) string {
	if h, ok := gitHomes.Load(t); ok {
		return h.(string)
	}
	h := t.TempDir()
	gitHomes.Store(t, h)
	t.Cleanup(func() { gitHomes.Delete(t) })
	return h
}

// GitEnv returns the environment RunGit runs git with: the process's own,
// minus every GIT_* variable, plus a hermetic configuration (no system or
// global config, an empty HOME, a fixed identity and dates).
func GitEnv(t testing.TB) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return append(env,
		"HOME="+gitHome(t),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=mcpx test", "GIT_AUTHOR_EMAIL=test@mcpx.invalid",
		"GIT_COMMITTER_NAME=mcpx test", "GIT_COMMITTER_EMAIL=test@mcpx.invalid",
		"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
	)
}

// RunGit runs git with args in dir under GitEnv and returns its trimmed
// stdout; it fails t if git fails. The default branch is main and local
// file:// submodules are allowed.
func RunGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	full := append([]string{
		"-c", "init.defaultBranch=main",
		"-c", "commit.gpgsign=false",
		"-c", "protocol.file.allow=always",
	}, args...)
	cmd := exec.Command(Git(t), full...)
	cmd.Dir = dir
	cmd.Env = GitEnv(t)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// Canon is p with every symlink resolved (the form the broker compares).
func Canon(t testing.TB, p string) string {
	t.Helper()
	c, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Mkdir creates p and its parents and returns p's canonical form.
func Mkdir(t testing.TB, p string) string {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return Canon(t, p)
}

// WriteFile writes content to the file p (its directory must exist).
func WriteFile(t testing.TB, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// WriteFiles writes files (slash-separated paths relative to dir -> content),
// creating directories as needed.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Worktrees makes a git repository at main (created if needed) holding files,
// commits them, and adds one linked worktree per name in links, each on its
// own branch, as siblings of main. It returns the canonical (symlink-free)
// paths: the main checkout first, then the linked worktrees in order.
func Worktrees(t testing.TB, main string, files map[string]string, links ...string) []string {
	t.Helper()
	if err := os.MkdirAll(main, 0o755); err != nil {
		t.Fatal(err)
	}
	RunGit(t, main, "init", "-q")
	WriteFiles(t, main, files)
	RunGit(t, main, "add", "-A")
	RunGit(t, main, "commit", "-q", "--allow-empty", "-m", "initial")
	paths := []string{canonical(t, main)}
	for _, name := range links {
		wt := filepath.Join(filepath.Dir(main), name)
		RunGit(t, main, "worktree", "add", "-q", "-b", name, wt)
		paths = append(paths, canonical(t, wt))
	}
	return paths
}

func canonical(t testing.TB, p string) string {
	t.Helper()
	c, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	c, err = filepath.Abs(c)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
