package nixresolve_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/nixresolve"
)

// TestResolveCachedWithNoNix: the first resolution runs nix (lock, evaluate,
// build); later ones, and those of a new Resolver on the same cache
// directory, run no nix process at all.
func TestResolveCachedWithNoNix(t *testing.T) {
	nx := testenv.Nix(t)
	for _, kind := range []string{"path", "git+file"} {
		t.Run(kind, func(t *testing.T) {
			flake := t.TempDir()
			tag := "tag-" + strings.ReplaceAll(kind, "+", "-")
			writeFlake(t, nx, flake, echoScript(tag))
			ref := "path:" + flake
			if kind == "git+file" {
				testenv.RunGit(t, flake, "init", "-q")
				testenv.RunGit(t, flake, "add", ".")
				testenv.RunGit(t, flake, "commit", "-q", "-m", "flake")
				ref = "git+file://" + flake
			}
			spec := "nix:" + ref + "#demo"
			cnt := newCounter(t, nx.Bin)
			cache := t.TempDir()

			r := newResolver(t, nx, cache, cnt.bin)
			p, err := r.Resolve(t.Context(), spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := cnt.calls(t); !slices.Equal(got, []string{"flake_metadata", "eval_--json", "build_--json"}) {
				t.Errorf("first resolution ran %v, want lock, eval, build", got)
			}
			if !strings.HasPrefix(p.StorePath, "/nix/store/") || p.Path != filepath.Join(p.StorePath, "bin", "demo") {
				t.Errorf("program %+v: want <store path>/bin/demo (meta.mainProgram)", p)
			}
			if out := runProgram(t, p.Path, "hello"); out != tag+" hello" {
				t.Errorf("the resolved program printed %q, want %q", out, tag+" hello")
			}
			if p.Spec != spec || p.Locked.NarHash == "" || p.Locked.URL == "" {
				t.Errorf("program %+v: want the spec and its locked ref", p)
			}
			if kind == "git+file" {
				if head := testenv.RunGit(t, flake, "rev-parse", "HEAD"); p.Locked.Rev != head {
					t.Errorf("locked rev %q, want HEAD %s", p.Locked.Rev, head)
				}
			}
			if link, err := os.Readlink(p.Root); err != nil || link != p.StorePath {
				t.Errorf("GC root %s -> %q (%v), want the store path", p.Root, link, err)
			}

			before := len(cnt.calls(t))
			again, err := r.Resolve(t.Context(), spec)
			if err != nil || again != p {
				t.Errorf("second resolution = %+v, %v; want the cached %+v", again, err, p)
			}
			r2 := newResolver(t, nx, cache, cnt.bin)
			restarted, err := r2.Resolve(t.Context(), spec)
			if err != nil || restarted.Path != p.Path || restarted.Locked != p.Locked {
				t.Errorf("a new resolver on the same cache = %+v, %v; want %+v", restarted, err, p)
			}
			if n := len(cnt.calls(t)); n != before {
				t.Errorf("cached resolutions ran nix %d times: %v", n-before, cnt.calls(t)[before:])
			}
		})
	}
}

// TestResolveProgramName: meta.mainProgram, else the name without its
// version; no attribute means the default package.
func TestResolveProgramName(t *testing.T) {
	nx := testenv.Nix(t)
	flake := t.TempDir()
	writeFlake(t, nx, flake, echoScript("named"))
	r := newResolver(t, nx, t.TempDir(), "")
	for spec, bin := range map[string]string{
		"nix:path:" + flake + "#plain": "plain",
		"nix:path:" + flake:            "plain",
		"nix:path:" + flake + "#demo":  "demo",
	} {
		p, err := r.Resolve(t.Context(), spec)
		if err != nil {
			t.Errorf("%s: %v", spec, err)
			continue
		}
		if filepath.Base(p.Path) != bin || runProgram(t, p.Path) != "named" {
			t.Errorf("%s resolved to %s, want bin/%s printing named", spec, p.Path, bin)
		}
	}
}

// TestResolveShared: concurrent resolutions of one spec run nix once.
func TestResolveShared(t *testing.T) {
	nx := testenv.Nix(t)
	flake := t.TempDir()
	writeFlake(t, nx, flake, echoScript("shared"))
	cnt := newCounter(t, nx.Bin)
	r := newResolver(t, nx, t.TempDir(), cnt.bin)
	spec := "nix:path:" + flake + "#demo"
	const n = 8
	paths := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p, err := r.Resolve(t.Context(), spec)
			paths[i], errs[i] = p.Path, err
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || paths[i] != paths[0] {
			t.Errorf("resolution %d = %q, %v; want %q", i, paths[i], errs[i], paths[0])
		}
	}
	locks := 0
	for _, c := range cnt.calls(t) {
		if c == "flake_metadata" {
			locks++
		}
	}
	if locks != 1 {
		t.Errorf("%d concurrent resolutions ran `nix flake metadata` %d times, want once: %v", n, locks, cnt.calls(t))
	}
}

// TestGCRoot: a cached program is alive to nix's collector; once its root
// is gone and the path collected, the next resolution builds it again
// instead of failing the spawn.
func TestGCRoot(t *testing.T) {
	nx := testenv.Nix(t)
	flake := t.TempDir()
	writeFlake(t, nx, flake, echoScript("rooted"))
	cnt := newCounter(t, nx.Bin)
	r := newResolver(t, nx, t.TempDir(), cnt.bin)
	spec := "nix:path:" + flake + "#demo"
	p, err := r.Resolve(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	// `nix store delete` is the collector run on the named paths only:
	// the same liveness check as `nix store gc`, without collecting the
	// shared store of other tests (or of the developer running them).
	out, err := nixCmd(nx, "store", "delete", p.StorePath)
	if err == nil || !strings.Contains(out, "still alive") {
		t.Fatalf("nix store delete of a cached path: %v %s; want it refused as alive", err, out)
	}
	if runProgram(t, p.Path) != "rooted" {
		t.Fatal("the cached program no longer runs")
	}

	if err := os.Remove(p.Root); err != nil {
		t.Fatal(err)
	}
	if out, err := nixCmd(nx, "store", "delete", p.StorePath); err != nil {
		t.Fatalf("nix store delete once the root is gone: %v %s", err, out)
	}
	if _, err := os.Stat(p.Path); !os.IsNotExist(err) {
		t.Fatalf("the store path survived its deletion: %v", err)
	}
	before := len(cnt.calls(t))
	again, err := r.Resolve(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(cnt.calls(t)) == before {
		t.Error("a vanished store path was answered from the cache")
	}
	if again.Path != p.Path || runProgram(t, again.Path) != "rooted" {
		t.Errorf("re-resolved to %s, want %s rebuilt", again.Path, p.Path)
	}
}

// TestResolveErrors: each failure names the spec, says what failed, and
// carries nix's own message.
func TestResolveErrors(t *testing.T) {
	nx := testenv.Nix(t)
	flake := t.TempDir()
	writeFlake(t, nx, flake, echoScript("errors"))
	broken := t.TempDir()
	testenv.WriteFiles(t, broken, map[string]string{"flake.nix": "{ outputs = { self }: { ; }"})
	r := newResolver(t, nx, t.TempDir(), "")
	ref := "path:" + flake
	for _, c := range []struct {
		name, spec string
		kind       error
		want       []string
	}{
		{"missing attribute", "nix:" + ref + "#nope", nixresolve.ErrEval,
			[]string{`cannot evaluate attribute "nope"`, "does not provide attribute", "packages." + nx.System + ".nope"}},
		{"missing path", "nix:path:" + flake + "/gone#demo", nixresolve.ErrLock,
			[]string{"cannot lock flake reference", "No such file or directory"}},
		{"syntax error", "nix:path:" + broken + "#demo", nixresolve.ErrLock, []string{"syntax error"}},
		{"evaluation error", "nix:" + ref + "#evalerr", nixresolve.ErrEval, []string{"kaputt: this package is broken"}},
		{"build failure", "nix:" + ref + "#bad", nixresolve.ErrBuild,
			[]string{`cannot build attribute "bad"`, "failed with exit code 3", "fatal: no compiler here"}},
		{"no program", "nix:" + ref + "#nobin", nixresolve.ErrProgram, []string{"no executable bin/nobin", "meta.mainProgram"}},
		{"bad spec", "nix:githb:o/r#x", nixresolve.ErrSpec, []string{`unknown flake reference type "githb:"`}},
		{"unreachable github", "nix:github:mcpx-test/unreachable#x", nixresolve.ErrLock,
			[]string{"cannot lock flake reference github:mcpx-test/unreachable", "unable to download"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := r.Resolve(t.Context(), c.spec)
			checkErr(t, err, c.spec, c.kind, c.want...)
		})
	}
}

func checkErr(t *testing.T, err error, spec string, kind error, want ...string) {
	t.Helper()
	var e *nixresolve.Error
	if !errors.As(err, &e) || !errors.Is(err, kind) {
		t.Fatalf("error %v (%T), want a *nixresolve.Error of kind %v", err, err, kind)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "command "+spec+": ") {
		t.Errorf("error %q does not start by naming the spec %s", msg, spec)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q lacks %q", msg, w)
		}
	}
}

// TestOfflineNothingCached: offline, a ref not in the store fails at once
// and says that nothing is cached; a cached spec still resolves.
func TestOfflineNothingCached(t *testing.T) {
	nx := testenv.Nix(t)
	flake := t.TempDir()
	writeFlake(t, nx, flake, echoScript("offline"))
	cache := t.TempDir()
	spec := "nix:path:" + flake + "#demo"
	if _, err := newResolver(t, nx, cache, "").Resolve(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	off := newResolver(t, nx, cache, "", func(o *nixresolve.Options) { o.Offline = true })
	gh := "nix:github:mcpx-test/unreachable#x"
	_, err := off.Resolve(t.Context(), gh)
	checkErr(t, err, gh, nixresolve.ErrLock, "nix.offline is set and nothing is cached for this spec")
	if p, err := off.Resolve(t.Context(), spec); err != nil || runProgram(t, p.Path) != "offline" {
		t.Errorf("offline resolution of a cached spec: %+v, %v", p, err)
	}
}

// TestNoNix: without nix the error says so, naming the spec; it never
// falls back to a command on PATH.
func TestNoNix(t *testing.T) {
	nx := testenv.Nix(t)
	flake := t.TempDir()
	writeFlake(t, nx, flake, echoScript("nonix"))
	spec := "nix:path:" + flake + "#demo"
	t.Run("not on PATH", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		r := newResolver(t, nx, t.TempDir(), "nix")
		_, err := r.Resolve(t.Context(), spec)
		checkErr(t, err, spec, nixresolve.ErrNoNix, "needs Nix on the broker machine; install Nix or use a plain command")
	})
	t.Run("nix.binary missing", func(t *testing.T) {
		r := newResolver(t, nx, t.TempDir(), filepath.Join(t.TempDir(), "nix"))
		_, err := r.Resolve(t.Context(), spec)
		checkErr(t, err, spec, nixresolve.ErrNoNix, "needs Nix on the broker machine (nix.binary")
	})
}

// TestCallerContext: a caller that gives up gets its context's error; the
// resolution goes on and lands in the cache.
func TestCallerContext(t *testing.T) {
	nx := testenv.Nix(t)
	flake := t.TempDir()
	writeFlake(t, nx, flake, echoScript("patient"))
	cnt := newCounter(t, nx.Bin)
	r := newResolver(t, nx, t.TempDir(), cnt.bin)
	spec := "nix:path:" + flake + "#demo"
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := r.Resolve(ctx, spec); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled caller got %v, want context.Canceled", err)
	}
	testenv.WaitFor(t, "the abandoned resolution to be cached", func() bool { _, ok := r.Cached(spec); return ok })
	p, err := r.Resolve(t.Context(), spec)
	if err != nil || runProgram(t, p.Path) != "patient" {
		t.Errorf("resolution after an abandoned one: %+v, %v", p, err)
	}
}

// TestOfflineSyntaxErrorIsNotOffline (real-use 17): a local flake that does
// not parse is reported as what it is, nix's syntax error, not as
// "nix.offline is set and nothing is cached": offline is not the cause.
func TestOfflineSyntaxErrorIsNotOffline(t *testing.T) {
	nx := testenv.Nix(t)
	flake := t.TempDir()
	testenv.WriteFiles(t, flake, map[string]string{"flake.nix": "{ outputs = { self }: { ; }\n"})
	off := newResolver(t, nx, t.TempDir(), "", func(o *nixresolve.Options) { o.Offline = true })
	spec := "nix:path:" + flake + "#demo"
	_, err := off.Resolve(t.Context(), spec)
	if err == nil {
		t.Fatal("a flake with a syntax error resolved")
	}
	if strings.Contains(err.Error(), "offline") {
		t.Errorf("error %q blames nix.offline", err)
	}
	if !strings.Contains(err.Error(), "syntax error") {
		t.Errorf("error %q does not pass on nix's syntax error", err)
	}
}
