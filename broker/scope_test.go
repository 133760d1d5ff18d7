package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// repoFixture is a repository with one linked worktree:
//
//	<tmp>/app         main checkout, with sub/deep/er
//	<tmp>/app-wt1     linked worktree on branch app-wt1
type repoFixture struct {
	tmp, main, wt1 string
}

func newRepoFixture(t testing.TB) repoFixture {
	t.Helper()
	tmp := canon(t, t.TempDir())
	paths := testenv.Worktrees(t, filepath.Join(tmp, "app"), map[string]string{
		"README":             "app\n",
		"sub/deep/er/x.txt":  "x\n",
		"sub/deep/er/y/z.go": "package y\n",
	}, "app-wt1")
	return repoFixture{tmp: tmp, main: paths[0], wt1: paths[1]}
}

// agreeWithGit checks the resolver's repo and worktree answers for dir
// against git's.
func agreeWithGit(t *testing.T, r *Resolver, dir string, env ...string) {
	t.Helper()
	top, common := testenv.GitRevParse(t, dir, env...)
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

// Short names for the file helpers every test here uses.
var (
	canon     = testenv.Canon
	mkdir     = testenv.Mkdir
	writeFile = testenv.WriteFile
)

func resolveIn(r *Resolver, kind config.ScopeKind, cwd string) ResolvedScope {
	return r.Resolve(kind, CallContext{Cwd: cwd, CallID: "c1"})
}

func wantScope(t *testing.T, got, want ResolvedScope) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resolved scope mismatch (-want +got):\n%s", diff)
	}
}

func TestResolveLinkedWorktreeAndMainCheckout(t *testing.T) {
	fx := newRepoFixture(t)
	r := NewResolver(ResolverOptions{})
	repo := ResolvedScope{Key: "repo:" + filepath.Join(fx.main, ".git"), Root: fx.main}
	for _, tt := range []struct {
		cwd, top string
	}{
		{fx.main, fx.main},
		{filepath.Join(fx.main, "sub"), fx.main},
		{filepath.Join(fx.main, "sub/deep/er/y"), fx.main},
		{fx.wt1, fx.wt1},
		{filepath.Join(fx.wt1, "sub/deep/er"), fx.wt1},
	} {
		for range 2 { // cold, then warm
			wantScope(t, resolveIn(r, config.ScopeWorktree, tt.cwd), ResolvedScope{Key: "worktree:" + tt.top, Root: tt.top})
			wantScope(t, resolveIn(r, config.ScopeRepo, tt.cwd), repo)
			wantScope(t, resolveIn(r, config.ScopeCwd, tt.cwd), ResolvedScope{Key: "cwd:" + tt.cwd, Root: tt.cwd})
		}
		agreeWithGit(t, r, tt.cwd)
	}
}

func TestResolveSubmodule(t *testing.T) {
	tmp := canon(t, t.TempDir())
	lib := testenv.Worktrees(t, filepath.Join(tmp, "lib"), map[string]string{"pkg/lib.go": "package pkg\n"})[0]
	super := testenv.Worktrees(t, filepath.Join(tmp, "super"), map[string]string{"main.go": "package main\n"})[0]
	testenv.RunGit(t, super, "submodule", "add", "-q", lib, "third_party/lib")
	testenv.RunGit(t, super, "commit", "-q", "-m", "add lib")

	sm := filepath.Join(super, "third_party/lib")
	if data, err := os.ReadFile(filepath.Join(sm, ".git")); err != nil || !bytes.HasPrefix(data, []byte("gitdir: ")) {
		t.Fatalf("submodule .git is not a gitdir file: %q, %v", data, err)
	}
	r := NewResolver(ResolverOptions{})
	smRepo := ResolvedScope{Key: "repo:" + filepath.Join(super, ".git/modules/third_party/lib"), Root: sm}
	for _, cwd := range []string{sm, filepath.Join(sm, "pkg")} {
		wantScope(t, resolveIn(r, config.ScopeWorktree, cwd), ResolvedScope{Key: "worktree:" + sm, Root: sm})
		wantScope(t, resolveIn(r, config.ScopeRepo, cwd), smRepo)
		agreeWithGit(t, r, cwd)
	}
	// The superproject is a repository of its own, and so is the inside of
	// the submodule's git directory.
	wantScope(t, resolveIn(r, config.ScopeRepo, filepath.Join(super, "third_party")),
		ResolvedScope{Key: "repo:" + filepath.Join(super, ".git"), Root: super})
	agreeWithGit(t, r, filepath.Join(super, "third_party"))
	inModule := filepath.Join(super, ".git/modules/third_party/lib/refs")
	wantScope(t, resolveIn(r, config.ScopeRepo, inModule), smRepo)
	// git takes core.worktree as the top level even from inside the git dir.
	wantScope(t, resolveIn(r, config.ScopeWorktree, inModule), ResolvedScope{Key: "worktree:" + sm, Root: sm})
	agreeWithGit(t, r, inModule)
}

func TestResolveSymlinkedCwd(t *testing.T) {
	fx := newRepoFixture(t)
	r := NewResolver(ResolverOptions{})
	real := filepath.Join(fx.main, "sub/deep")
	link := filepath.Join(fx.tmp, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	for _, cwd := range []string{link, link + "/", filepath.Join(fx.tmp, "link/er/.."), filepath.Join(fx.tmp, "app-wt1/../link")} {
		got, err := r.CanonicalCwd(cwd)
		if err != nil || got != real {
			t.Errorf("CanonicalCwd(%q) = %q, %v; want %q", cwd, got, err, real)
		}
		wantScope(t, resolveIn(r, config.ScopeCwd, cwd), ResolvedScope{Key: "cwd:" + real, Root: real})
		wantScope(t, resolveIn(r, config.ScopeWorktree, cwd), resolveIn(r, config.ScopeWorktree, real))
		wantScope(t, resolveIn(r, config.ScopeRepo, cwd), resolveIn(r, config.ScopeRepo, real))
	}
	// A symlink through the middle of the path, and one that is repointed:
	// the cached canonical form must follow it.
	mid := filepath.Join(fx.tmp, "link/er/y")
	wantScope(t, resolveIn(r, config.ScopeCwd, mid), ResolvedScope{Key: "cwd:" + filepath.Join(real, "er/y"), Root: filepath.Join(real, "er/y")})
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fx.wt1, link); err != nil {
		t.Fatal(err)
	}
	wantScope(t, resolveIn(r, config.ScopeWorktree, link), ResolvedScope{Key: "worktree:" + fx.wt1, Root: fx.wt1})
	if got, err := r.CanonicalCwd(link); err != nil || got != fx.wt1 {
		t.Errorf("after repointing, CanonicalCwd(link) = %q, %v; want %q", got, err, fx.wt1)
	}
	// A symlink inside the repository to elsewhere in it, and a repository
	// reached through a symlinked parent.
	agreeWithGit(t, r, link)
}

func TestResolveOutsideGit(t *testing.T) {
	dir := mkdir(t, filepath.Join(t.TempDir(), "plain/a/b"))
	if top, common := testenv.GitRevParse(t, dir); top != "" || common != "" {
		t.Skipf("the temp dir is inside a git repository (%s)", common)
	}
	r := NewResolver(ResolverOptions{})
	for _, kind := range []config.ScopeKind{config.ScopeRepo, config.ScopeWorktree} {
		wantScope(t, resolveIn(r, kind, dir), ResolvedScope{Key: "cwd:" + dir, Root: dir, Degraded: reasonNoRepo})
	}
	wantScope(t, resolveIn(r, config.ScopeCwd, dir), ResolvedScope{Key: "cwd:" + dir, Root: dir})
	agreeWithGit(t, r, dir)
}

func TestResolveWithoutCwd(t *testing.T) {
	r := NewResolver(ResolverOptions{})
	missing := filepath.Join(t.TempDir(), "missing")
	for _, kind := range []config.ScopeKind{config.ScopeRepo, config.ScopeWorktree, config.ScopeCwd} {
		wantScope(t, resolveIn(r, kind, ""), ResolvedScope{Key: "call:c1", Degraded: reasonNoCwd})
		wantScope(t, resolveIn(r, kind, "relative/dir"), ResolvedScope{Key: "call:c1", Degraded: reasonRelCwd})
		wantScope(t, resolveIn(r, kind, missing), ResolvedScope{Key: "call:c1", Degraded: reasonBadCwd})
	}
}

func TestResolveCallerScopes(t *testing.T) {
	r := NewResolver(ResolverOptions{})
	tests := []struct {
		kind config.ScopeKind
		cc   CallContext
		want ResolvedScope
	}{
		{config.ScopeGlobal, CallContext{Cwd: "/nowhere", Session: "s"}, ResolvedScope{Key: "global"}},
		{config.ScopeCall, CallContext{Session: "s", CallID: "c9"}, ResolvedScope{Key: "call:c9"}},

		{config.ScopeSession, CallContext{Session: "s1", ParentSession: "p1", CallID: "c"}, ResolvedScope{Key: "session:s1"}},
		{config.ScopeSession, CallContext{ParentSession: "p1", CallID: "c"}, ResolvedScope{Key: "call:c", Degraded: reasonNoSession}},

		{config.ScopeParentSession, CallContext{Session: "s1", ParentSession: "p1", CallID: "c"}, ResolvedScope{Key: "psession:p1"}},
		{config.ScopeParentSession, CallContext{ParentSession: "p1", CallID: "c"}, ResolvedScope{Key: "psession:p1"}},
		{config.ScopeParentSession, CallContext{Session: "s1", CallID: "c"}, ResolvedScope{Key: "session:s1"}}, // a top-level session is its own parent
		{config.ScopeParentSession, CallContext{Pid: 7, Lease: "l", CallID: "c"}, ResolvedScope{Key: "call:c", Degraded: reasonNoParent}},

		{config.ScopePid, CallContext{Pid: 4242, Lease: "l1", CallID: "c"}, ResolvedScope{Key: "lease:l1"}},
		{config.ScopePid, CallContext{Pid: 4242, CallID: "c"}, ResolvedScope{Key: "pid:4242"}},
		{config.ScopePid, CallContext{Lease: "l1", CallID: "c"}, ResolvedScope{Key: "lease:l1"}},
		{config.ScopePid, CallContext{Pid: -1, Lease: "l1", CallID: "c"}, ResolvedScope{Key: "lease:l1"}},
		{config.ScopePid, CallContext{Session: "s", CallID: "c"}, ResolvedScope{Key: "call:c", Degraded: reasonNoPid}},

		{"", CallContext{Session: "s", CallID: "c"}, ResolvedScope{Key: "call:c", Degraded: reasonUnknownKind}},
		{"workspace", CallContext{Session: "s", CallID: "c"}, ResolvedScope{Key: "call:c", Degraded: reasonUnknownKind}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%+v", tt.kind, tt.cc), func(t *testing.T) {
			wantScope(t, r.Resolve(tt.kind, tt.cc), tt.want)
		})
	}
}

func TestResolveBareRepository(t *testing.T) {
	fx := newRepoFixture(t)
	bare := filepath.Join(fx.tmp, "app.git")
	testenv.RunGit(t, fx.tmp, "clone", "-q", "--bare", fx.main, bare)
	wt := filepath.Join(fx.tmp, "bare-wt")
	testenv.RunGit(t, bare, "worktree", "add", "-q", "-b", "feature", wt)

	r := NewResolver(ResolverOptions{})
	// No main worktree: the repo root is the common dir's parent, the same
	// for every caller sharing the key.
	repo := ResolvedScope{Key: "repo:" + bare, Root: fx.tmp}
	for _, cwd := range []string{bare, filepath.Join(bare, "refs/heads")} {
		wantScope(t, resolveIn(r, config.ScopeWorktree, cwd), ResolvedScope{Key: "cwd:" + cwd, Root: cwd, Degraded: reasonBare})
		wantScope(t, resolveIn(r, config.ScopeRepo, cwd), repo)
		agreeWithGit(t, r, cwd)
	}
	for _, cwd := range []string{wt, filepath.Join(wt, "sub/deep")} {
		wantScope(t, resolveIn(r, config.ScopeWorktree, cwd), ResolvedScope{Key: "worktree:" + wt, Root: wt})
		wantScope(t, resolveIn(r, config.ScopeRepo, cwd), repo)
		agreeWithGit(t, r, cwd)
	}
}

// TestResolveBareInProject covers the popular layout of a bare clone in
// project/.bare, project/.git naming it, and worktrees beside it.
func TestResolveBareInProject(t *testing.T) {
	fx := newRepoFixture(t)
	proj := mkdir(t, filepath.Join(fx.tmp, "proj"))
	testenv.RunGit(t, proj, "clone", "-q", "--bare", fx.main, ".bare")
	writeFile(t, filepath.Join(proj, ".git"), "gitdir: ./.bare\n")
	testenv.RunGit(t, proj, "worktree", "add", "-q", "-b", "topic", "topic")

	r := NewResolver(ResolverOptions{})
	repo := ResolvedScope{Key: "repo:" + filepath.Join(proj, ".bare"), Root: proj}
	wantScope(t, resolveIn(r, config.ScopeWorktree, proj), ResolvedScope{Key: "cwd:" + proj, Root: proj, Degraded: reasonBare})
	wantScope(t, resolveIn(r, config.ScopeRepo, proj), repo)
	agreeWithGit(t, r, proj)
	topic := filepath.Join(proj, "topic")
	wantScope(t, resolveIn(r, config.ScopeWorktree, topic), ResolvedScope{Key: "worktree:" + topic, Root: topic})
	wantScope(t, resolveIn(r, config.ScopeRepo, topic), repo)
	agreeWithGit(t, r, topic)
}

func TestResolveInsideDotGit(t *testing.T) {
	fx := newRepoFixture(t)
	r := NewResolver(ResolverOptions{})
	for _, cwd := range []string{filepath.Join(fx.main, ".git"), filepath.Join(fx.main, ".git/refs/heads"), filepath.Join(fx.main, ".git/worktrees/app-wt1")} {
		wantScope(t, resolveIn(r, config.ScopeWorktree, cwd), ResolvedScope{Key: "cwd:" + cwd, Root: cwd, Degraded: reasonInGitDir})
		wantScope(t, resolveIn(r, config.ScopeRepo, cwd), ResolvedScope{Key: "repo:" + filepath.Join(fx.main, ".git"), Root: fx.main})
		agreeWithGit(t, r, cwd)
	}
}

func TestResolveRelativeGitFile(t *testing.T) {
	tmp := canon(t, t.TempDir())
	wt := filepath.Join(tmp, "checkout")
	mkdir(t, filepath.Join(tmp, "store"))
	testenv.RunGit(t, tmp, "init", "-q", "--separate-git-dir", filepath.Join(tmp, "store/sep.git"), wt)
	mkdir(t, filepath.Join(wt, "src"))
	r := NewResolver(ResolverOptions{})
	for i, content := range []string{"gitdir: ../store/sep.git\n", "gitdir: ../store/./sep.git/\r\n", "gitdir: " + filepath.Join(tmp, "store/sep.git")} {
		writeFile(t, filepath.Join(wt, ".git"), content)
		if i > 0 {
			// Same size and mtime granularity could hide a rewrite; a new
			// inode cannot. (git rewrites .git files by rename as well.)
			os.Rename(filepath.Join(wt, ".git"), filepath.Join(wt, ".git.tmp"))
			os.Rename(filepath.Join(wt, ".git.tmp"), filepath.Join(wt, ".git"))
		}
		for _, cwd := range []string{wt, filepath.Join(wt, "src")} {
			wantScope(t, resolveIn(r, config.ScopeWorktree, cwd), ResolvedScope{Key: "worktree:" + wt, Root: wt})
			// A --separate-git-dir repository records no way back to its
			// main worktree; the first caller from there names it.
			wantScope(t, resolveIn(r, config.ScopeRepo, cwd), ResolvedScope{Key: "repo:" + filepath.Join(tmp, "store/sep.git"), Root: wt})
			agreeWithGit(t, r, cwd)
		}
	}
}

// TestResolveRepoSeparateGitDir (real-use 13): in a --separate-git-dir
// checkout the repo scope's root is the main worktree, whichever caller
// comes first — a linked worktree, the git dir itself or a subdirectory —
// never the git dir's parent, outside every checkout.
func TestResolveRepoSeparateGitDir(t *testing.T) {
	for _, tt := range []struct {
		name       string
		gd, wt, lw string // relative to a temp dir
	}{
		{"siblings", "gd", "wt", "lw"},                                // git init --separate-git-dir=/x/gd /x/wt
		{"store elsewhere", "store/app.git", "src/app", "src/app-lw"}, // found beside the linked worktree
	} {
		t.Run(tt.name, func(t *testing.T) {
			tmp := canon(t, t.TempDir())
			gd, wt, lw := filepath.Join(tmp, tt.gd), filepath.Join(tmp, tt.wt), filepath.Join(tmp, tt.lw)
			mkdir(t, filepath.Dir(gd))
			mkdir(t, filepath.Dir(wt))
			testenv.RunGit(t, tmp, "init", "-q", "--separate-git-dir", gd, wt)
			testenv.RunGit(t, wt, "commit", "-q", "--allow-empty", "-m", "initial")
			testenv.RunGit(t, wt, "worktree", "add", "-q", "-b", "lw", lw)
			mkdir(t, filepath.Join(wt, "sub"))
			want := ResolvedScope{Key: "repo:" + gd, Root: wt}
			for _, first := range []string{lw, gd, filepath.Join(gd, "refs"), filepath.Join(wt, "sub"), wt} {
				r := NewResolver(ResolverOptions{}) // a new daemon: first comes first
				for _, cwd := range []string{first, wt, lw} {
					wantScope(t, resolveIn(r, config.ScopeRepo, cwd), want)
				}
			}
			// The main worktree moved away: it is looked for again.
			r := NewResolver(ResolverOptions{})
			wantScope(t, resolveIn(r, config.ScopeRepo, lw), want)
			if err := os.Remove(filepath.Join(wt, ".git")); err != nil {
				t.Fatal(err)
			}
			wantScope(t, resolveIn(r, config.ScopeRepo, lw), ResolvedScope{Key: "repo:" + gd, Root: filepath.Dir(gd)})
		})
	}
}

func TestResolveBrokenGitFile(t *testing.T) {
	tmp := canon(t, t.TempDir())
	dir := mkdir(t, filepath.Join(tmp, "broken/src"))
	r := NewResolver(ResolverOptions{})
	for _, content := range []string{"gitdir: ../nowhere\n", "not a gitdir line\n", "gitdir: ../src\n"} {
		writeFile(t, filepath.Join(tmp, "broken/.git"), content)
		for _, kind := range []config.ScopeKind{config.ScopeRepo, config.ScopeWorktree} {
			wantScope(t, resolveIn(r, kind, dir), ResolvedScope{Key: "cwd:" + dir, Root: dir, Degraded: reasonBrokenGit})
		}
		if top, common := testenv.GitRevParse(t, dir); top != "" || common != "" {
			t.Errorf("git accepts .git file %q: %s %s", content, top, common)
		}
	}
}

func TestResolveCeilingDirs(t *testing.T) {
	fx := newRepoFixture(t)
	deep := filepath.Join(fx.main, "sub/deep/er")
	for _, tt := range []struct {
		ceiling, cwd string
		inRepo       bool
	}{
		{fx.main, deep, false}, // never moves into the ceiling
		{filepath.Join(fx.main, "sub"), deep, false},
		{fx.main, fx.main, true},                              // but a cwd that is one is looked at
		{filepath.Join(fx.main, "sub/deep/er/y"), deep, true}, // below the cwd: no effect
		{fx.tmp, deep, true},
	} {
		r := NewResolver(ResolverOptions{CeilingDirs: []string{tt.ceiling, "relative/ignored"}})
		got := resolveIn(r, config.ScopeWorktree, tt.cwd)
		if inRepo := got.Degraded == ""; inRepo != tt.inRepo {
			t.Errorf("ceiling %s, cwd %s: %+v; want in repo = %v", tt.ceiling, tt.cwd, got, tt.inRepo)
		}
		agreeWithGit(t, r, tt.cwd, "GIT_CEILING_DIRECTORIES="+tt.ceiling)
	}
}

// With a revalidation window a cached answer is trusted, unchecked, until
// the window passes: a long window keeps the stale answer.
func TestResolveRevalidateWindow(t *testing.T) {
	tmp := canon(t, t.TempDir())
	dir := mkdir(t, filepath.Join(tmp, "later/a"))
	top := filepath.Join(tmp, "later")
	r := NewResolver(ResolverOptions{Revalidate: time.Hour})
	outside := ResolvedScope{Key: "cwd:" + dir, Root: dir, Degraded: reasonNoRepo}
	wantScope(t, resolveIn(r, config.ScopeWorktree, dir), outside)
	testenv.RunGit(t, top, "init", "-q")
	wantScope(t, resolveIn(r, config.ScopeWorktree, dir), outside)
	// Without a window the same question sees the repository at once.
	wantScope(t, resolveIn(NewResolver(ResolverOptions{}), config.ScopeWorktree, dir), ResolvedScope{Key: "worktree:" + top, Root: top})
}

func TestResolveNoticesChanges(t *testing.T) {
	t.Run("git init above a resolved cwd", func(t *testing.T) {
		tmp := canon(t, t.TempDir())
		dir := mkdir(t, filepath.Join(tmp, "later/a/b"))
		r := NewResolver(ResolverOptions{})
		wantScope(t, resolveIn(r, config.ScopeWorktree, dir), ResolvedScope{Key: "cwd:" + dir, Root: dir, Degraded: reasonNoRepo})
		top := filepath.Join(tmp, "later")
		testenv.RunGit(t, top, "init", "-q")
		wantScope(t, resolveIn(r, config.ScopeWorktree, dir), ResolvedScope{Key: "worktree:" + top, Root: top})
		wantScope(t, resolveIn(r, config.ScopeRepo, dir), ResolvedScope{Key: "repo:" + filepath.Join(top, ".git"), Root: top})
		agreeWithGit(t, r, dir)
		// and rm -rf .git takes it away again
		if err := os.RemoveAll(filepath.Join(top, ".git")); err != nil {
			t.Fatal(err)
		}
		wantScope(t, resolveIn(r, config.ScopeRepo, dir), ResolvedScope{Key: "cwd:" + dir, Root: dir, Degraded: reasonNoRepo})
	})
	t.Run("nested repository below the top", func(t *testing.T) {
		fx := newRepoFixture(t)
		r := NewResolver(ResolverOptions{})
		deep := filepath.Join(fx.main, "sub/deep/er")
		wantScope(t, resolveIn(r, config.ScopeWorktree, deep), ResolvedScope{Key: "worktree:" + fx.main, Root: fx.main})
		nested := filepath.Join(fx.main, "sub")
		testenv.RunGit(t, nested, "init", "-q")
		wantScope(t, resolveIn(r, config.ScopeWorktree, deep), ResolvedScope{Key: "worktree:" + nested, Root: nested})
		agreeWithGit(t, r, deep)
	})
	t.Run("worktree removed", func(t *testing.T) {
		fx := newRepoFixture(t)
		r := NewResolver(ResolverOptions{})
		sub := filepath.Join(fx.wt1, "sub")
		for _, cwd := range []string{fx.wt1, sub} {
			wantScope(t, resolveIn(r, config.ScopeWorktree, cwd), ResolvedScope{Key: "worktree:" + fx.wt1, Root: fx.wt1})
			if _, err := r.CanonicalCwd(cwd); err != nil {
				t.Fatal(err)
			}
		}
		testenv.RunGit(t, fx.main, "worktree", "remove", "--force", fx.wt1)
		for _, cwd := range []string{fx.wt1, sub} {
			wantScope(t, resolveIn(r, config.ScopeWorktree, cwd), ResolvedScope{Key: "call:c1", Degraded: reasonBadCwd})
			if _, err := r.CanonicalCwd(cwd); KindOf(err) != KindBadRequest {
				t.Errorf("CanonicalCwd of a removed worktree: %v", err)
			}
		}
		// The directory comes back, but not as a worktree.
		mkdir(t, sub)
		for _, cwd := range []string{fx.wt1, sub} {
			wantScope(t, resolveIn(r, config.ScopeWorktree, cwd), ResolvedScope{Key: "cwd:" + cwd, Root: cwd, Degraded: reasonNoRepo})
			agreeWithGit(t, r, cwd)
		}
		// And then it is a worktree again.
		os.RemoveAll(fx.wt1)
		testenv.RunGit(t, fx.main, "worktree", "add", "-q", fx.wt1, "app-wt1")
		wantScope(t, resolveIn(r, config.ScopeWorktree, sub), ResolvedScope{Key: "worktree:" + fx.wt1, Root: fx.wt1})
		agreeWithGit(t, r, sub)
	})
	t.Run("core.bare set on a repository", func(t *testing.T) {
		fx := newRepoFixture(t)
		r := NewResolver(ResolverOptions{})
		wantScope(t, resolveIn(r, config.ScopeWorktree, fx.main), ResolvedScope{Key: "worktree:" + fx.main, Root: fx.main})
		testenv.RunGit(t, fx.main, "config", "core.bare", "true")
		wantScope(t, resolveIn(r, config.ScopeWorktree, fx.main), ResolvedScope{Key: "cwd:" + fx.main, Root: fx.main, Degraded: reasonBare})
		agreeWithGit(t, r, fx.main)
		// Linked worktrees take neither core.bare nor core.worktree from it.
		wantScope(t, resolveIn(r, config.ScopeWorktree, fx.wt1), ResolvedScope{Key: "worktree:" + fx.wt1, Root: fx.wt1})
		agreeWithGit(t, r, fx.wt1)
	})
	t.Run("core.worktree set on a repository", func(t *testing.T) {
		fx := newRepoFixture(t)
		r := NewResolver(ResolverOptions{})
		wantScope(t, resolveIn(r, config.ScopeRepo, fx.main), ResolvedScope{Key: "repo:" + filepath.Join(fx.main, ".git"), Root: fx.main})
		elsewhere := mkdir(t, filepath.Join(fx.tmp, "elsewhere"))
		testenv.RunGit(t, fx.main, "config", "core.worktree", "../../elsewhere")
		wantScope(t, resolveIn(r, config.ScopeWorktree, fx.main), ResolvedScope{Key: "worktree:" + elsewhere, Root: elsewhere})
		wantScope(t, resolveIn(r, config.ScopeRepo, fx.main), ResolvedScope{Key: "repo:" + filepath.Join(fx.main, ".git"), Root: elsewhere})
		agreeWithGit(t, r, fx.main)
		wantScope(t, resolveIn(r, config.ScopeWorktree, fx.wt1), ResolvedScope{Key: "worktree:" + fx.wt1, Root: fx.wt1})
		agreeWithGit(t, r, fx.wt1)
	})
}

func TestCanonicalCwdErrors(t *testing.T) {
	tmp := canon(t, t.TempDir())
	file := filepath.Join(tmp, "file")
	writeFile(t, file, "x")
	dangling := filepath.Join(tmp, "dangling")
	if err := os.Symlink(filepath.Join(tmp, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	r := NewResolver(ResolverOptions{})
	for _, cwd := range []string{"", "relative", "./x", "~/src", filepath.Join(tmp, "missing"), file, file + "/x", dangling, tmp + "/\x00"} {
		got, err := r.CanonicalCwd(cwd)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("CanonicalCwd(%q) = %q, %v; want a *broker.Error", cwd, got, err)
			continue
		}
		if e.Kind != KindBadRequest || e.Field != "Mcpx-Cwd" || e.Msg == "" || e.Hint == "" || got != "" {
			t.Errorf("CanonicalCwd(%q) = %q, %#v", cwd, got, e)
		}
		if strings.Contains(e.Msg, "nowhere") {
			t.Errorf("CanonicalCwd(%q): message %q shows where a symlink leads", cwd, e.Msg)
		}
	}
	// A directory that turns into a file is noticed on a cached answer.
	d := mkdir(t, filepath.Join(tmp, "d"))
	if got, err := r.CanonicalCwd(d); err != nil || got != d {
		t.Fatalf("CanonicalCwd(%q) = %q, %v", d, got, err)
	}
	os.Remove(d)
	writeFile(t, d, "now a file")
	if _, err := r.CanonicalCwd(d); KindOf(err) != KindBadRequest {
		t.Errorf("CanonicalCwd of a directory replaced by a file: %v", err)
	}
}

// TestResolveLogsDegradationOnce: one Info record per degraded key with
// its reason; call: keys, new on every call, once per kind and reason.
func TestResolveLogsDegradationOnce(t *testing.T) {
	dir := mkdir(t, filepath.Join(t.TempDir(), "plain"))
	var mu sync.Mutex
	var records []slog.Record
	r := NewResolver(ResolverOptions{Logger: slog.New(recordHandler{func(rec slog.Record) {
		mu.Lock()
		records = append(records, rec)
		mu.Unlock()
	}})})
	for i := range 3 {
		id := fmt.Sprint("c", i)
		r.Resolve(config.ScopeRepo, CallContext{Cwd: dir, CallID: id})
		r.Resolve(config.ScopeWorktree, CallContext{Cwd: dir, CallID: id})
		r.Resolve(config.ScopeSession, CallContext{CallID: id})
		r.Resolve(config.ScopeWorktree, CallContext{CallID: id})
		r.Resolve(config.ScopeCwd, CallContext{Cwd: dir, CallID: id}) // not degraded
		r.Resolve(config.ScopeSession, CallContext{Session: "s", CallID: id})
	}
	var got []string
	for _, rec := range records {
		line := rec.Level.String() + " " + rec.Message
		rec.Attrs(func(a slog.Attr) bool {
			v := a.Value.String()
			if a.Key == "key" {
				v = strings.Replace(v, dir, "<dir>", 1)
			}
			line += " " + a.Key + "=" + v
			return true
		})
		got = append(got, line)
	}
	want := []string{
		"INFO scope degraded scope=repo key=cwd:<dir> reason=" + reasonNoRepo,
		"INFO scope degraded scope=session key=call:c0 reason=" + reasonNoSession,
		"INFO scope degraded scope=worktree key=call:c0 reason=" + reasonNoCwd,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log records (-want +got):\n%s", diff)
	}
}

type recordHandler struct{ f func(slog.Record) }

func (h recordHandler) Enabled(context.Context, slog.Level) bool      { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error { h.f(r); return nil }
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h recordHandler) WithGroup(string) slog.Handler                 { return h }

// TestResolveConcurrent resolves from many goroutines while a repository
// appears and disappears under one of the directories. Run with -race.
func TestResolveConcurrent(t *testing.T) {
	fx := newRepoFixture(t)
	flip := mkdir(t, filepath.Join(fx.tmp, "flip/a"))
	flipTop := filepath.Dir(flip)
	link := filepath.Join(fx.tmp, "link")
	if err := os.Symlink(fx.wt1, link); err != nil {
		t.Fatal(err)
	}
	r := NewResolver(ResolverOptions{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			// Not t's helpers: this is not the test's goroutine.
			dotgit := filepath.Join(flipTop, ".git")
			os.MkdirAll(filepath.Join(dotgit, "objects"), 0o755)
			os.MkdirAll(filepath.Join(dotgit, "refs"), 0o755)
			os.WriteFile(filepath.Join(dotgit, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
			os.RemoveAll(dotgit)
		}
	})
	expect := map[string]map[ResolvedScope]bool{
		fx.main:                            {{Key: "worktree:" + fx.main, Root: fx.main}: true},
		filepath.Join(fx.main, "sub/deep"): {{Key: "worktree:" + fx.main, Root: fx.main}: true},
		fx.wt1:                             {{Key: "worktree:" + fx.wt1, Root: fx.wt1}: true},
		link:                               {{Key: "worktree:" + fx.wt1, Root: fx.wt1}: true},
		flip: {
			{Key: "worktree:" + flipTop, Root: flipTop}:              true,
			{Key: "cwd:" + flip, Root: flip, Degraded: reasonNoRepo}: true,
		},
	}
	var workers sync.WaitGroup
	for w := range 8 {
		workers.Go(func() {
			for i := range 300 {
				for cwd, ok := range expect {
					cc := CallContext{Cwd: cwd, CallID: fmt.Sprint(w, "-", i), Session: "s"}
					if got := r.Resolve(config.ScopeWorktree, cc); !ok[got] {
						t.Errorf("worktree scope in %s = %+v", cwd, got)
						return
					}
					if got := r.Resolve(config.ScopeSession, cc); got.Key != "session:s" {
						t.Errorf("session scope = %+v", got)
						return
					}
					if _, err := r.CanonicalCwd(cwd); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	workers.Wait()
	close(stop)
	wg.Wait()
}

// TestScopeCacheBounded: the caches hold at most scopeCacheMax entries.
func TestScopeCacheBounded(t *testing.T) {
	var c scopeCache[int]
	for i := range scopeCacheMax + 100 {
		c.put(fmt.Sprint(i), i)
	}
	if n := len(c.m); n != scopeCacheMax {
		t.Errorf("cache holds %d entries, want %d", n, scopeCacheMax)
	}
	if v, ok := c.get(fmt.Sprint(scopeCacheMax + 99)); !ok || v != scopeCacheMax+99 {
		t.Errorf("the newest entry is missing: %v, %v", v, ok)
	}
}

func ExampleResolver_Resolve() {
	r := NewResolver(ResolverOptions{})
	cc := CallContext{Session: "s-1", CallID: "c-42", Lease: "remote-7"}
	for _, kind := range []config.ScopeKind{config.ScopeGlobal, config.ScopeSession, config.ScopeParentSession, config.ScopePid, config.ScopeWorktree} {
		rs := r.Resolve(kind, cc)
		fmt.Printf("%-14s %-14s %q\n", kind, rs.Key, rs.Degraded)
	}
	// Output:
	// global         global         ""
	// session        session:s-1    ""
	// parent-session session:s-1    ""
	// pid            lease:remote-7 ""
	// worktree       call:c-42      "no cwd declared"
}
