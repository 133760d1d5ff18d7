package broker

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"mcpx.dev/mcpx/config"
)

// Warm benchmarks resolve a cwd the resolver has seen: a map lookup plus the
// stat calls that revalidate the cached answer. Cold builds a new resolver
// per operation: canonicalisation, the walk up, reading .git and config.

func benchResolve(b *testing.B, r *Resolver, kind config.ScopeKind, cwd, want string) {
	b.Helper()
	cc := CallContext{Cwd: cwd, CallID: "c1"}
	if got := r.Resolve(kind, cc); got.Key != want {
		b.Fatalf("Resolve(%s, %s) = %+v, want key %s", kind, cwd, got, want)
	}
	b.ReportAllocs()
	for b.Loop() {
		r.Resolve(kind, cc)
	}
}

func BenchmarkResolveWarmWorktree(b *testing.B) {
	fx := newRepoFixture(b)
	r := NewResolver(ResolverOptions{})
	b.Run("linked/top", func(b *testing.B) { benchResolve(b, r, config.ScopeWorktree, fx.wt1, "worktree:"+fx.wt1) })
	b.Run("linked/depth3", func(b *testing.B) {
		benchResolve(b, r, config.ScopeWorktree, filepath.Join(fx.wt1, "sub/deep/er"), "worktree:"+fx.wt1)
	})
	b.Run("main/top", func(b *testing.B) { benchResolve(b, r, config.ScopeWorktree, fx.main, "worktree:"+fx.main) })
	link := filepath.Join(fx.tmp, "link")
	if err := os.Symlink(fx.wt1, link); err != nil {
		b.Fatal(err)
	}
	b.Run("symlinked", func(b *testing.B) { benchResolve(b, r, config.ScopeWorktree, link, "worktree:"+fx.wt1) })
}

// BenchmarkStat is the unit the warm benchmarks are made of: one stat of an
// existing file, one of a missing one. Compare ratios within one run.
func BenchmarkStat(b *testing.B) {
	fx := newRepoFixture(b)
	for _, p := range []string{filepath.Join(fx.wt1, ".git"), filepath.Join(fx.wt1, "sub/.git")} {
		b.Run(filepath.Base(filepath.Dir(p)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				os.Stat(p)
			}
		})
	}
}

func BenchmarkResolveWarmRepo(b *testing.B) {
	fx := newRepoFixture(b)
	r := NewResolver(ResolverOptions{})
	benchResolve(b, r, config.ScopeRepo, fx.wt1, "repo:"+filepath.Join(fx.main, ".git"))
}

// BenchmarkResolveWarmWindowed is the broker's setting: answers checked
// within the last second are trusted without a stat.
func BenchmarkResolveWarmWindowed(b *testing.B) {
	fx := newRepoFixture(b)
	r := NewResolver(ResolverOptions{Revalidate: time.Second})
	b.Run("linked/depth3", func(b *testing.B) {
		benchResolve(b, r, config.ScopeWorktree, filepath.Join(fx.wt1, "sub/deep/er"), "worktree:"+fx.wt1)
	})
	b.Run("main/top", func(b *testing.B) { benchResolve(b, r, config.ScopeWorktree, fx.main, "worktree:"+fx.main) })
	dir := mkdir(b, filepath.Join(b.TempDir(), "plain/a/b"))
	b.Run("outside", func(b *testing.B) { benchResolve(b, r, config.ScopeWorktree, dir, "cwd:"+dir) })
}

func BenchmarkResolveWarmCwd(b *testing.B) {
	fx := newRepoFixture(b)
	r := NewResolver(ResolverOptions{})
	benchResolve(b, r, config.ScopeCwd, fx.wt1, "cwd:"+fx.wt1)
}

// BenchmarkResolveWarmOutside revalidates a negative answer: one stat of
// .git per ancestor up to the root.
func BenchmarkResolveWarmOutside(b *testing.B) {
	dir := mkdir(b, filepath.Join(b.TempDir(), "plain/a/b"))
	r := NewResolver(ResolverOptions{})
	benchResolve(b, r, config.ScopeWorktree, dir, "cwd:"+dir)
}

func BenchmarkResolveWarmGlobal(b *testing.B) {
	r := NewResolver(ResolverOptions{})
	benchResolve(b, r, config.ScopeGlobal, "", "global")
}

func BenchmarkCanonicalCwdWarm(b *testing.B) {
	fx := newRepoFixture(b)
	r := NewResolver(ResolverOptions{})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.CanonicalCwd(fx.wt1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResolveCold(b *testing.B) {
	fx := newRepoFixture(b)
	cwd := filepath.Join(fx.wt1, "sub/deep")
	b.Run("worktree", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			NewResolver(ResolverOptions{}).Resolve(config.ScopeWorktree, CallContext{Cwd: cwd, CallID: "c1"})
		}
	})
	b.Run("repo", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			NewResolver(ResolverOptions{}).Resolve(config.ScopeRepo, CallContext{Cwd: cwd, CallID: "c1"})
		}
	})
}

func BenchmarkResolveWarmWorktreeParallel(b *testing.B) {
	fx := newRepoFixture(b)
	r := NewResolver(ResolverOptions{})
	cc := CallContext{Cwd: fx.wt1, CallID: "c1"}
	r.Resolve(config.ScopeWorktree, cc)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Resolve(config.ScopeWorktree, cc)
		}
	})
}
