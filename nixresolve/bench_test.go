package nixresolve_test

import (
	"strconv"
	"testing"

	"mcpx.dev/mcpx/internal/testing/testenv"
)

// BenchmarkResolveCold: a spec never seen: lock, evaluate, build (a new
// derivation each time, so nothing is in the store yet).
func BenchmarkResolveCold(b *testing.B) {
	nx := testenv.Nix(b)
	r := newResolverB(b, nx)
	i := 0
	for b.Loop() {
		b.StopTimer()
		flake := b.TempDir()
		i++
		writeFlakeB(b, nx, flake, echoScript("cold-"+strconv.Itoa(i)+"-"+flake))
		b.StartTimer()
		if _, err := r.Resolve(b.Context(), "nix:path:"+flake+"#demo"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolveCached: the hot path of every spawn after the first.
func BenchmarkResolveCached(b *testing.B) {
	nx := testenv.Nix(b)
	r := newResolverB(b, nx)
	flake := b.TempDir()
	writeFlakeB(b, nx, flake, echoScript("cached"))
	spec := "nix:path:" + flake + "#demo"
	if _, err := r.Resolve(b.Context(), spec); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := r.Resolve(b.Context(), spec); err != nil {
			b.Fatal(err)
		}
	}
}
