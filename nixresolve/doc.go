// Package nixresolve will resolve nix:<flakeref>[#attr] program specs to store
// paths on the daemon's machine, once, with a persistent cache keyed by the
// locked ref and a GC root per entry. It knows nothing of the pool or HTTP.
//
// TODO(2026-11-30, issue 11 "Nix program specs resolved on the daemon"): not
// built yet. The package exists now so that its dependency rules bind from its
// first line.
package nixresolve
