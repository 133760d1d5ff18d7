package scripts

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// EnvRuntime names the environment variable that picks the runtime when
// --runtime is not given: a runtime name or a path to its binary.
const EnvRuntime = "MCPX_RUNTIME"

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
	for _, choice := range []struct{ value, from string }{{flag, "--runtime"}, {env, "$" + EnvRuntime}, {config, `the client config's "runtime"`}} {
		if choice.value == "" {
			continue
		}
		name := runtimeName(choice.value)
		if name == "" {
			return Runtime{}, fmt.Errorf("%s %q is not a runtime: want one of %s, or a path to one's binary",
				choice.from, choice.value, strings.Join(Runtimes, ", "))
		}
		path := choice.value
		if !strings.Contains(path, "/") {
			p, err := lookPath(path)
			if err != nil {
				return Runtime{}, fmt.Errorf("%s %s: %s is not on PATH; install it, or name its binary by path", choice.from, path, path)
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
	return Runtime{}, fmt.Errorf("no JavaScript runtime: none of %s is on PATH; install one, or name one with --runtime or $%s",
		strings.Join(Runtimes, ", "), EnvRuntime)
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
