package scripts

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// EnvRuntime names the environment variable that picks the runtime when
// --runtime is not given: a runtime name, a path to its binary or a nix:
// spec. EnvScriptRuntime is the original's name for it, an alias: when
// both are set, EnvRuntime wins.
const (
	EnvRuntime       = "MCPX_RUNTIME"
	EnvScriptRuntime = "MCPX_SCRIPT_RUNTIME"
)

// RuntimeFromEnv is the runtime the environment names (getenv reads it),
// and the variable it came from: $MCPX_RUNTIME, else its alias
// $MCPX_SCRIPT_RUNTIME. other is the alias's value when both are set and
// differ (the caller may say that $MCPX_RUNTIME won).
func RuntimeFromEnv(getenv func(string) string) (value, from, other string) {
	v, alias := getenv(EnvRuntime), getenv(EnvScriptRuntime)
	switch {
	case v != "":
		if alias != v {
			other = alias
		}
		return v, "$" + EnvRuntime, other
	case alias != "":
		return alias, "$" + EnvScriptRuntime, ""
	}
	return "", "", ""
}

// RuntimeChoice is one place a runtime may be named: its value ("" = not
// named there) and the place, for messages ("--runtime", "script.runtime").
type RuntimeChoice struct{ Value, From string }

// Runtimes are the runtimes mcpx runs scripts on, in the order the first
// installed one is chosen (see the package doc for why).
var Runtimes = []string{"deno", "bun", "node"}

// Runtime is a JavaScript runtime to run a script on.
type Runtime struct {
	// Name is deno, bun or node.
	Name string
	// Path is its binary.
	Path string
}

// ChooseRuntime picks the runtime: flag (a name or a path to a binary whose
// base name starts with one), else env, else config (the client config's
// "runtime"), else the first of Runtimes that lookPath finds. lookPath is
// exec.LookPath in the CLI.
func ChooseRuntime(flag, env, config string, lookPath func(string) (string, error)) (Runtime, error) {
	return PickRuntime([]RuntimeChoice{{flag, "--runtime"}, {env, "$" + EnvRuntime}, {config, `the client config's "runtime"`}}, lookPath, nil)
}

// PickRuntime picks the runtime the first choice with a value names, else
// the first of Runtimes that lookPath finds. A nix: spec is built by nix,
// when not nil (it returns the program's path; package nixresolve), and
// must name a runtime's binary; nix nil refuses one.
func PickRuntime(choices []RuntimeChoice, lookPath func(string) (string, error), nix func(RuntimeChoice) (string, error)) (Runtime, error) {
	for _, choice := range choices {
		if choice.Value == "" {
			continue
		}
		if strings.HasPrefix(choice.Value, "nix:") {
			return nixRuntime(choice, nix)
		}
		name := runtimeName(choice.Value)
		if name == "" {
			return Runtime{}, fmt.Errorf("%s %q is not a runtime: want one of %s, a path to one's binary, or a nix: spec that builds one",
				choice.From, choice.Value, strings.Join(Runtimes, ", "))
		}
		path := choice.Value
		if !strings.Contains(path, "/") {
			p, err := lookPath(path)
			if err != nil {
				return Runtime{}, fmt.Errorf("%s %s: %s is not on PATH; install it, or name its binary by path", choice.From, path, path)
			}
			path = p
		}
		return Runtime{Name: name, Path: path}, nil
	}
	for _, name := range Runtimes {
		if p, err := lookPath(name); err == nil {
			return Runtime{Name: name, Path: p}, nil
		}
	}
	return Runtime{}, fmt.Errorf("no JavaScript runtime: none of %s is on PATH; install one, or name one with --runtime, $%s or script.runtime",
		strings.Join(Runtimes, ", "), EnvRuntime)
}

// nixRuntime is the runtime a nix: spec builds.
func nixRuntime(choice RuntimeChoice, nix func(RuntimeChoice) (string, error)) (Runtime, error) {
	if nix == nil {
		return Runtime{}, fmt.Errorf("%s %s: a nix: runtime is for mcpx run and exec; name deno, bun or node, or a path to one's binary", choice.From, choice.Value)
	}
	path, err := nix(choice)
	if err != nil {
		return Runtime{}, fmt.Errorf("%s: %w", choice.From, err)
	}
	name := runtimeName(path)
	if name == "" {
		return Runtime{}, fmt.Errorf("%s %s builds %s, which is not %s: name the package of one (nix:nixpkgs#deno)",
			choice.From, choice.Value, path, strings.Join(Runtimes, ", "))
	}
	return Runtime{Name: name, Path: path}, nil
}

// runtimeName is the runtime a --runtime value names: itself, or the
// runtime its binary's base name starts with ("bun.exe", "node22").
func runtimeName(v string) string {
	if slices.Contains(Runtimes, v) {
		return v
	}
	if !strings.Contains(v, "/") {
		return ""
	}
	base := filepath.Base(v)
	for _, n := range Runtimes {
		if strings.HasPrefix(base, n) {
			return n
		}
	}
	return ""
}

// Args returns the arguments that run runner with the script's positional
// args: deno with every permission (a script mcpx runs is the user's own
// program, as it is on node and bun), node with the bundle's source map
// (deno and bun apply it unasked), bun as it is.
func (r Runtime) Args(runner string, args []string) []string {
	var argv []string
	switch r.Name {
	case "deno":
		argv = []string{"run", "--allow-all", "--no-prompt", "--quiet", runner}
	case "node":
		argv = []string{"--enable-source-maps", runner}
	default:
		argv = []string{runner}
	}
	return append(argv, args...)
}

// ConfinedDenoArgs are deno's arguments that run runner confined: it may
// read read, write write, connect to host (host:port) only, and nothing
// else — no other file, socket, process, FFI or system information. It
// may read every variable of its environment, which its runner makes.
func ConfinedDenoArgs(runner, host string, read, write []string, args []string) []string {
	argv := []string{"run", "--no-prompt", "--quiet", "--no-remote", "--no-npm",
		"--allow-net=" + host, "--allow-read=" + strings.Join(read, ","), "--allow-write=" + strings.Join(write, ","),
		"--allow-env", runner}
	return append(argv, args...)
}

// Env returns the variables a runtime needs beside the caller's: Deno's
// update check off, so that a run prints nothing it did not ask for.
func (r Runtime) Env() []string {
	if r.Name == "deno" {
		return []string{"DENO_NO_UPDATE_CHECK=1"}
	}
	return nil
}
