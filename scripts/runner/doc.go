// Package runner runs a script against a broker: `mcpx run` minus its
// command line. Package scripts prepares what runs (the named scripts, the
// runtime, the bundle and its runner module, the envelope); this package
// gives the run its session, its lease and, for a broker on another
// machine, the relay, fetches the generated client (kept in a cache by
// ETag), runs the runtime and ends them all.
//
//	r, err := runner.Start(ctx, runner.Options{Client: bc, Caller: caller, Dir: dir, LeaseTTL: 30 * time.Second})
//	if err != nil { ... }
//	env, err := r.Script(ctx, runner.Script{Runtime: rt, Path: script, Cache: filepath.Join(state, "run"),
//		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
//	err = r.Close(ctx) // releases the lease, stops the run's session, closes the relay
//	os.Exit(env.ExitCode)
//
// # The plan
//
// NewPlan decides what runs before the broker is reached: the script,
// found by name on the config chain's scripts/ directories or as a file;
// the chain's script settings (LoadSettings: each config.json's "script"
// block, nearest first, under the command line's, a file config.ReadTrusted
// refuses left out); whether it runs on an interpreter (by extension or
// shebang) or a JavaScript runtime, and which runtime; where its packages
// come from; and whether the run needs its relay. Plan.Environment
// captures the script's execution environment (script.environment) with
// nix, cached under the state directory.
//
// # Sessions and leases
//
// Each run has a session of its own, "run-" and 128 random bits, unless
// the caller names one (--session); the caller's session becomes its
// parent. It holds a lease of its own, renewed every ttl/3 while the
// script runs, unless the caller runs it under one (--lease, or
// $MCPX_LEASE from `mcpx lease run`). At Close the lease is released and a
// minted session stopped, so session- and pid-scoped servers live exactly
// one run; a run killed outright leaves its lease to expire within its ttl.
//
// # The generated client
//
// The client module is kept in the cache as client-<ETag>.ts, where the
// ETag is the broker's hash of the module. The request names the modules
// kept (If-None-Match), so an unchanged one is answered 304 with no body —
// what matters against a remote broker, where the module crosses the
// tailnet — and a changed one is written once. The cache keeps the
// keepClients most recently used modules.
//
// A snippet (`mcpx exec`) that imports nothing is bundled once: its bundle
// is kept as bundle-<hash>/ (keepBundles of them), the hash over the
// client's ETag, the snippet and its options, the directory it resolves in
// with the tsconfig.json, jsconfig.json and package.json files esbuild
// reads there, and the mcpx binary; the next run copies it into its own
// directory instead of running esbuild. A script file, or any import or
// require, is bundled on every run.
//
// # Log records
//
// A script's log records (the generated client's log: one JSON object a
// line on stderr) do not say what the run knows: Fields adds it, after
// the record's own members (its session and parent session, the tool
// call the run is, the script's pid and cwd, mcpx's version, the time
// since the script started). `mcpx run` enriches the records it prints
// with Fields.Enrich; Script.Records enriches stderr as the script writes
// it, which code mode's run (package api) answers as its logs.
//
// # Interrupts and exit codes
//
// An interrupt (ctx ends) is passed on to the script as SIGINT: it ends,
// its connections close, and the broker cancels its in-flight calls; one
// that has not ended after InterruptGrace is killed. The exit code is the
// script's, 128+n for a signal.
//
// RunLeased runs any command under a lease (`mcpx lease run`) the same
// way, but passes an interrupt on as SIGTERM and never kills the command:
// its lease is held until it exits. Capped keeps a bounded part of a
// command's output for an envelope.
package runner
