package broker

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/broker/config"
	"mcpx.dev/mcpx/internal/testenv"
)

// gitTruth asks the git CLI what it thinks of dir: the worktree top level
// and the common dir, canonical, "" where git has no answer. The resolver
// must agree with it without running git.
func gitTruth(t testing.TB, dir string, env ...string) (top, common string) {
	t.Helper()
	run := func(args ...string) string {
		cmd := exec.Command(testenv.Git(t), args...)
		cmd.Dir = dir
		cmd.Env = append(testenv.GitEnv(t), env...)
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

// agreeWithGit checks the resolver's repo and worktree answers for dir
// against git's.
func agreeWithGit(t *testing.T, r *Resolver, dir string, env ...string) {
	t.Helper()
	top, common := gitTruth(t, dir, env...)
	cc := CallContext{Cwd: canon(t, dir), CallID: "c1"}
	wt := r.Resolve(config.ScopeWorktree, cc)
	if top != "" {
		if want := (ResolvedScope{Key: "worktree:" + top, Root: top}); wt != want {
			t.Errorf("worktree scope in %s = %+v; git says top level %s", dir, wt, top)
		}
	} else if !strings.HasPrefix(wt.Key, "cwd:") || wt.Degraded == "" {
		t.Errorf("worktree scope in %s = %+v; git sees no worktree, want a degraded cwd: key", dir, wt)
	}
	repo := r.Resolve(config.ScopeRepo, cc)
	if common != "" {
		if want := "repo:" + common; repo.Key != want || repo.Degraded != "" {
			t.Errorf("repo scope in %s = %+v; git says common dir %s", dir, repo, common)
		}
	} else if !strings.HasPrefix(repo.Key, "cwd:") || repo.Degraded == "" {
		t.Errorf("repo scope in %s = %+v; git sees no repository, want a degraded cwd: key", dir, repo)
	}
}

func canon(t testing.TB, p string) string {
	t.Helper()
	c, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mkdir(t testing.TB, p string) string {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return canon(t, p)
}

func writeFile(t testing.TB, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestParseGitFile(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"gitdir: /abs/path/.git/worktrees/x\n", "/abs/path/.git/worktrees/x", true},
		{"gitdir: ../.git/modules/sm\n", "/base/.git/modules/sm", true},
		{"gitdir: ../sep.git\r\n", "/base/sep.git", true},
		{"gitdir: rel", "/base/dir/rel", true},
		{"gitdir: with space \n", "/base/dir/with space ", true}, // git keeps spaces
		{"gitdir: /a/../b/./c/\n\n\n", "/b/c", true},
		{"gitdir: \n", "", false},
		{"gitdir:/no/space\n", "", false},
		{"GITDIR: /x\n", "", false},
		{" gitdir: /x\n", "", false},
		{"", "", false},
		{"gitdir: /nul\x00byte\n", "", false},
	}
	for _, tt := range tests {
		got, err := parseGitFile([]byte(tt.in), "/base/dir")
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseGitFile(%q) = %q, %v; want %q, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func FuzzParseGitFile(f *testing.F) {
	for _, s := range []string{
		"gitdir: /abs/.git/worktrees/x\n", "gitdir: ../.git/modules/sm\n", "gitdir: x\r\n",
		"gitdir: \n", "gitdir:", "gitdir: a\r/", "gitdir: ../../../../..", "gitdir: /\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const dir = "/base/dir"
		got, err := parseGitFile(data, dir)
		if err != nil {
			if got != "" {
				t.Fatalf("error %v with a path %q", err, got)
			}
			return
		}
		if !bytes.HasPrefix(data, []byte("gitdir: ")) {
			t.Fatalf("accepted %q without the gitdir prefix", data)
		}
		if !filepath.IsAbs(got) || filepath.Clean(got) != got || strings.ContainsRune(got, 0) {
			t.Fatalf("parseGitFile(%q) = %q: not an absolute clean path", data, got)
		}
		// What git would name: the text after the prefix, CR/LF trimmed,
		// relative to dir.
		raw := strings.TrimRight(string(data[len("gitdir: "):]), "\r\n")
		want := raw
		if !filepath.IsAbs(want) {
			want = filepath.Join(dir, want)
		}
		if filepath.Clean(want) != got {
			t.Fatalf("parseGitFile(%q) = %q, want %q", data, got, filepath.Clean(want))
		}
		// Writing the answer back as an absolute gitdir reads the same,
		// unless it ends in what the parser trims.
		if !strings.HasSuffix(got, "\r") && !strings.HasSuffix(got, "\n") {
			again, err := parseGitFile([]byte("gitdir: "+got+"\n"), "/elsewhere")
			if err != nil || again != got {
				t.Fatalf("round trip of %q: %q, %v", got, again, err)
			}
		}
	})
}

func TestParseGitConfig(t *testing.T) {
	tests := []struct {
		name, in string
		want     gitCore
	}{
		{"empty", "", gitCore{}},
		{"init", "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n", gitCore{}},
		{"bare", "[core]\n\tbare = true\n", gitCore{bare: true}},
		{"case", "[CORE]\n\tBare = Yes\n", gitCore{bare: true}},
		{"no value is true", "[core]\n\tbare\n", gitCore{bare: true}},
		{"empty value is false", "[core]\n\tbare = true\n\tbare =\n", gitCore{}},
		{"last wins", "[core]\nbare = true\n[core]\nbare = off\n", gitCore{}},
		{"subsection ignored", "[core \"x\"]\n\tbare = true\n[core.y]\nbare = true\n", gitCore{}},
		{"other section", "[remote \"origin\"]\n\tbare = true\n\tworktree = /x\n", gitCore{}},
		{"submodule", "[core]\n\tbare = false\n\tworktree = ../../../sm\n[remote \"origin\"]\n\turl = /x\n", gitCore{worktree: "../../../sm"}},
		{"quoted", "[core]\n\tworktree = \"/a b/c\" ; comment\n", gitCore{worktree: "/a b/c"}},
		{"comment", "[core]\n\tworktree = /a # comment\n", gitCore{worktree: "/a"}},
		{"escapes", "[core]\n\tworktree = \"/a\\\"b\\\\c\"\n", gitCore{worktree: "/a\"b\\c"}},
		{"continuation", "[core]\n\tworktree = /a\\\n/b\n", gitCore{worktree: "/a/b"}},
		{"crlf", "[core]\r\n\tbare = true\r\n", gitCore{bare: true}},
		{"header and key on one line", "[core] bare = true\n", gitCore{bare: true}},
		{"inner spaces", "[core]\n\tworktree = /a  b \n", gitCore{worktree: "/a  b"}},
		{"bad boolean ignored", "[core]\n\tbare = maybe\n", gitCore{}},
		{"unterminated quote", "[core]\n\tworktree = \"/a\n\tbare = true\n", gitCore{bare: true}},
		{"broken header", "[core\n\tbare = true\n[core]\n\tworktree = /w\n", gitCore{worktree: "/w"}},
	}
	for _, tt := range tests {
		if got := parseGitConfig([]byte(tt.in)); got != tt.want {
			t.Errorf("%s: parseGitConfig(%q) = %+v, want %+v", tt.name, tt.in, got, tt.want)
		}
	}
}

func FuzzParseGitConfig(f *testing.F) {
	f.Add([]byte("[core]\n\tbare = true\n\tworktree = ../../../sm\n"))
	f.Add([]byte("[core \"x\"] bare\n[core]worktree=\"a\\\"b\" ; c\n"))
	f.Add([]byte("[core]\n\tworktree = /a\\\r\n/b\\"))
	f.Add([]byte("[\x00\x00\"")) // once read past the end of an unterminated subsection
	f.Fuzz(func(t *testing.T, data []byte) {
		parseGitConfig(data) // must not panic or loop
		// A value written the way `git config` quotes it reads back as itself.
		w := string(data)
		if strings.ContainsAny(w, "\x00\b") {
			return
		}
		quoted := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`).Replace(w)
		got := parseGitConfig([]byte("[core]\n\tworktree = \"" + quoted + "\"\n"))
		if got.worktree != w {
			t.Fatalf("worktree %q read back as %q", w, got.worktree)
		}
	})
}

func TestValidHead(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]bool{
		"ref: refs/heads/main\n":                      true,
		"ref:refs/heads/main":                         true,
		"ref: HEAD\n":                                 false,
		"0123456789abcdef0123456789abcdef01234567\n":  true,
		"0123456789abcdef0123456789abcdef01234567":    true,
		"0123456789abcdef0123456789abcdef0123456\n":   false,
		"0123456789abcdef0123456789abcdef01234567xyz": false,
		strings.Repeat("a", 64) + "\n":                true,
		"":                                            false,
		"garbage":                                     false,
	} {
		p := filepath.Join(dir, "HEAD")
		writeFile(t, p, content)
		if got := gitValidHead(p); got != want {
			t.Errorf("HEAD %q: valid = %v, want %v", content, got, want)
		}
	}
	os.Remove(filepath.Join(dir, "HEAD"))
	if err := os.Symlink("refs/heads/main", filepath.Join(dir, "HEAD")); err != nil {
		t.Fatal(err)
	}
	if !gitValidHead(filepath.Join(dir, "HEAD")) {
		t.Error("a symlink HEAD into refs/ is valid")
	}
}
