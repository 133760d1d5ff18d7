// Package nixresolve resolves nix:<flakeref>[#attr] program specs to
// programs in the Nix store, on the daemon's machine, once: a persistent
// cache keyed by the spec and its locked ref, with a GC root per entry,
// answers every later spawn with no nix process. It knows nothing of the
// pool, configs or HTTP.
//
//	r, err := nixresolve.New(nixresolve.Options{CacheDir: filepath.Join(state, "nix")})
//	defer r.Close()
//	p, err := r.Resolve(ctx, "nix:github:owner/repo/v1.2#server")
//	// p.Path = /nix/store/…-server-1.2/bin/server; p.Locked.Rev = the commit
//
// # Specs
//
// A command is a spec when it starts with "nix:" ([nixspec.Is]); anything
// else is a plain command, looked up on PATH as before. [nixspec.Parse]
// accepts path:, git+file:, git+https:, github:, gitlab:, tarball refs,
// bare paths (".", "./tools", "/abs") and registry names ("nixpkgs#hello");
// nix judges the rest at resolution. The grammar is its own leaf package,
// [mcpx.dev/mcpx/nixresolve/nixspec], so the config checks specs without
// linking the resolver. Relative paths are made absolute against
// Options.Dir (the daemon: the config file's directory).
//
// # Resolution
//
// A cold resolution runs three nix processes, bounded together by
// Options.Timeout (the process group of the one running is killed on
// expiry):
//
//  1. nix flake metadata --json <ref>: the locked URL, narHash and git rev;
//  2. nix eval --json <locked url>#<attr> --apply …: the output path and
//     the program name, as `nix run` picks it: meta.mainProgram, else
//     pname, else the name without its version;
//  3. nix build --json --out-link <CacheDir>/roots/<key> <locked url>#<attr>:
//     the store path, kept alive by that out-link (an indirect GC root).
//
// Evaluating and building the locked URL means what runs is what the lock
// names, even if the flake moves meanwhile. Nix 2.8 has no
// --print-out-paths; build's --json gives the path. Concurrent Resolve
// calls for one spec share one resolution; a caller's context bounds only
// its own wait, and an abandoned resolution still lands in the cache.
//
// # The hot path runs no nix
//
// Once a spec is resolved, Resolve answers from the cache with one stat of
// the program: no nix process, not even `nix flake metadata` to check the
// lock (a metadata run costs 30–170 ms, more for a remote ref, and would put
// nix back on every spawn and restart). The cache is trusted until a
// refresh: a floating ref (github:owner/repo, a path that is edited) stays
// on what it resolved to, never following its branch behind the user's
// back. A program that vanished from the store (its root removed and the
// path collected) is resolved again rather than failing spawn after spawn.
// The cache file (CacheDir/cache.json, written atomically) survives
// restarts: a new Resolver on the same directory starts hot.
//
// # Listing, refresh and GC
//
// [Resolver.Entries] lists the cache: each spec with its locked URL, rev
// and narHash, store path, program and resolution time, and whether it is
// pinned — the spec itself names a revision or content hash
// (github:owner/repo/<40 hex>, ?rev=…, ?narHash=…), so no refresh can
// change what it runs. [Resolver.Refresh] locks a spec anew, builds it and
// replaces its entry: the only way a floating spec moves. The new GC root
// is made by the build before the old one is removed, and a failed refresh
// leaves the old entry in place. [Resolver.GC] drops the entries its
// caller no longer references, with their roots and any stray root in
// roots/; nix's own collector frees the store paths later. The broker's
// nix.refresh policy ("on-reload", or an interval) calls Refresh and
// RefreshEnvironment for what its servers use and has resolved before.
//
// # Execution environments
//
// [Resolver.Environment] captures a server's execution environment: a
// flake's devShell (flake:<ref>[#attr], locked first like a program spec)
// or a legacy shell.nix (shell:<file>), with `nix print-dev-env --json`
// (Nix 2.8 has it, and -f/--file for a shell.nix), whose --profile in
// roots/ keeps the shell's inputs from nix's collector. Exported
// variables are kept, minus those describing nix's build sandbox (HOME,
// TMPDIR, TERM, NIX_BUILD_TOP, ...), the ones `nix develop` drops too. The
// capture is cached with the programs: a devShell by its ref until
// [Resolver.RefreshEnvironment], a shell.nix by the sha256 of its
// contents and of the other .nix files below its directory, which it may
// import (an edit to any is captured again; a file imported from outside
// that directory is not hashed). A hit runs no nix.
//
// An isolated environment ("isolated:<spec> <spec>…", nixspec.Isolated)
// holds only the packages of its nix: specs: a flake generated in
// CacheDir/isolated/ takes each package's flake as an input and builds
// one derivation with Nix's builtin:buildenv builder (the one profiles
// use; no nixpkgs, no shell) over their outputs, the earlier package
// winning a program two provide. Its one variable is PATH=<env>/bin, which
// replaces the host's PATH where the caller starts a child. The generated
// flake.lock keeps what the packages locked to until a refresh re-locks
// them; the environment's root is named by its key and that lock.
//
// # Errors
//
// Every failure is an [*Error] naming the spec, saying which step failed,
// and carrying nix's own message from its first "error:" line (a failed
// build's "last 10 log lines" included); its Err is a kind to test with
// errors.Is: [ErrNoNix] ("needs Nix on the broker machine; install Nix or
// use a plain command"), [ErrSpec], [ErrLock] (bad ref, missing path,
// unreachable or, with Offline, uncached remote ref), [ErrEval] (missing
// attribute, evaluation error), [ErrBuild], [ErrProgram] (no bin/<name>),
// [ErrTimeout]. A spec never falls back to a command on PATH.
//
// # Who calls it
//
// The broker gives the pool a Resolve hook (pool.Options.Resolve) that
// maps a command to the program to exec; the pool calls it in the
// goroutine that starts the instance, before the start timeout begins. So
// a resolution blocks neither the daemon nor other servers, only the spawn
// that needs it, and the pool stays ignorant of nix. Resolving in the
// broker before handing the pool its definitions was the alternative: it
// would run nix at config load and reload for servers nobody calls, and
// hold up SetServers for every server behind one slow build.
//
// A refresh that changes a program is the broker's to act on: it bumps the
// revision of each server running that spec (pool.Server.Revision), and the
// pool drains and replaces their instances as for any changed definition.
package nixresolve
