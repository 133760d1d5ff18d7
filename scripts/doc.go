// Package scripts is what `mcpx run` and `mcpx scripts` need besides the
// broker: named scripts found on the config chain, the choice of a
// JavaScript runtime, the bundle and runner that make the generated client
// importable, and the --json envelope. Package scripts/runner runs them
// against the broker: the run's session, lease and generated client.
//
//	dirs := ...                                         // the config chain's directories, nearest first
//	list := scripts.Find(dirs)                          // name, path, shadows
//	s, ok := scripts.Lookup(dirs, "report")
//	rt, err := scripts.ChooseRuntime(flag, os.Getenv(scripts.EnvRuntime), exec.LookPath)
//	b, err := scripts.Bundle(scripts.BundleOptions{Entry: s.Path, Client: clientTS, Lib: scripts.LibDirs(dirs), Dir: tmp})
//	cmd := exec.Command(rt.Path, rt.Args(b.Runner, args)...)
//
// # Named scripts
//
// Each directory of the config chain (found by the CLI with package
// config/chain: override paths, `.config/mcpx` or `.mcpx` from the cwd
// upward to the ceilings, the user's and the system's config directories,
// fallback paths) may hold `scripts/` and
// `lib/`. A script's name is its file's base name without .ts, .js or .mjs;
// a nearer directory's script shadows a farther one of the same name.
// Scripts import the generated client as "mcpx" or "@mcpx/client" and the
// chain's lib/ files as "@lib/<path>" (nearest lib/ holding the file wins).
//
// # Runtimes
//
// deno, bun or node: --runtime, else $MCPX_RUNTIME (or its alias
// $MCPX_SCRIPT_RUNTIME, the original's name; $MCPX_RUNTIME wins when both
// are set), else the chain's script.runtime, else the client config's
// runtime, else the first of deno, bun, node found on PATH. Any of them
// may be a nix: spec, built by package nixresolve (PickRuntime). Deno and Bun come first because they run
// TypeScript as they are and start fast; Node strips types only from 22.6
// (by default from 22.18), so it is the fallback.
//
// Every runtime runs the same thing: the script bundled (esbuild, in
// process, a few milliseconds) into one ES module with the generated client
// and lib/ resolved, and a small runner that imports it. One path for the
// three runtimes, and it works on Node 20, which cannot strip types. The
// bundle carries an inline source map, so a stack names the script's own
// file and line: node applies it (run with --enable-source-maps), deno
// unasked, and for bun, which does not, the launcher maps the frames of an
// error it prints (one thrown by the function or the top-level code).
//
// # The script contract
//
// stdout is the result, stderr diagnostics. If the module's default export
// (or, with --export, the named one) is a function, the runner calls it with
// the arguments — the parsed --json-args value, else the positional
// arguments as an array of strings — and prints its return value as JSON
// (nothing for undefined). Otherwise the top-level code is the script; it
// sees the positional arguments in process.argv.slice(2) (Deno.args on Deno).
// A function that throws exits 1 with the error on stderr. The run of a
// function ends when its promise settles (the runner exits then, so an idle
// keep-alive connection of Node's fetch does not hold it for half a second);
// top-level code ends when the runtime does. The exit code is the script's.
//
// # The launcher
//
// The runner is a launcher, itself bundled (it imports the client's log):
// it installs the call hook, makes every console member but log write log
// records through the client's log (console.log still writes stdout; the
// client writes its lines to the function under Symbol.for("mcpx.write")),
// defines script ({path, name, args, export}) as a global, imports the
// bundle dynamically, calls the function, and calls the module's suffix
// function in a finally with script and result ({ok, value, error, ms}),
// a throwing script's too. The prefix and suffix lines are one module with
// the script (entry.go): the prefix lines at its top, so that their
// imports and declarations are the script's, the suffix lines the body of
// a function of it, and the bundle's source map rewritten (sourcemap.go)
// so that a stack still names the script's own lines. The lines are the
// "script" blocks of the chain's config files merged (package config:
// Lines, MergeLines; null splices in what a layer inherits) under --prefix
// and --suffix. Minimal (--minimal) runs the bundle alone: no launcher.
//
// # Snippets
//
// `mcpx exec` runs a snippet in the module ExecModule makes around it:
// every export of the generated client in scope by name and the snippet
// the body of the default export, an async function of args (one
// expression is returned as it is). It is bundled from memory, resolved
// as a file in the run's directory, and named exec.ts.
//
// Every tool call the generated client makes is reported to the runner
// (clientgen's runtime calls the function under Symbol.for("mcpx.call")),
// which appends one JSON line per call to the file named by
// $MCPX_RUN_REPORT; ReadCalls reads them back for the envelope.
package scripts
