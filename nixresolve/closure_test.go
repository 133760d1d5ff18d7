package nixresolve_test

import (
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestClosure: a resolved program's store closure holds its store path
// (the test flake's program depends on nothing else), and asking again
// runs no nix.
func TestClosure(t *testing.T) {
	nx := testenv.Nix(t)
	flake := t.TempDir()
	writeFlake(t, nx, flake, echoScript("closure"))
	cnt := newCounter(t, nx.Bin)
	r := newResolver(t, nx, t.TempDir(), cnt.bin)
	p, err := r.Resolve(t.Context(), "nix:path:"+flake+"#demo")
	if err != nil {
		t.Fatal(err)
	}
	before := len(cnt.calls(t))
	paths, err := r.Closure(t.Context(), p.StorePath)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(paths, p.StorePath) {
		t.Errorf("the closure %v lacks the store path %s", paths, p.StorePath)
	}
	for _, q := range paths {
		if !strings.HasPrefix(q, "/nix/store/") {
			t.Errorf("%q in the closure is no store path", q)
		}
	}
	if got := cnt.calls(t)[before:]; !slices.Equal(got, []string{"path-info_--recursive"}) {
		t.Errorf("the closure ran %v, want one nix path-info", got)
	}
	if again, err := r.Closure(t.Context(), p.StorePath); err != nil || !slices.Equal(again, paths) || len(cnt.calls(t)) != before+1 {
		t.Errorf("asked again: %v, %v, %d nix runs; want the same from the cache", again, err, len(cnt.calls(t))-before)
	}
}
