package pool

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"mcpx.dev/mcpx/internal/placeholder"
	"mcpx.dev/mcpx/pool/proc"
)

// SpawnCwd decides a child's working directory: the server's configured cwd
// (already substituted) wins, then the instance root, else the child inherits
// the daemon's cwd. It is a pure function so the rule is tested on its own.
func SpawnCwd(configCwd, root string) (string, CwdSource) {
	switch {
	case configCwd != "":
		return configCwd, CwdConfig
	case root != "":
		return root, CwdScope
	default:
		return "", CwdDaemon
	}
}

// placeholder values available at spawn time.
type vars struct {
	root     string            // the instance root
	cwd      string            // the canonical cwd of the caller that caused the spawn
	instance string            // the instance id
	index    int               // the instance's index among its server's live instances
	key      string            // the scope key, as it is (substitute makes it safe)
	tmpdir   string            // the instance's private directory; "" = not made (yet)
	alloc    map[string]string // the instance's allocations by name; nil = not made (yet)
}

// substitute replaces the ${mcpx.*} placeholders in s; the grammar is
// package placeholder's. Other ${...} pass through untouched; config
// validation has already rejected unknown ${mcpx.*} names. An empty value is
// an error naming server and field: we never fall back to the daemon's own
// directory.
func substitute(s string, v vars, server, field string) (string, error) {
	var b strings.Builder
	last := 0
	for r := range placeholder.Refs(s) {
		b.WriteString(s[last:r.Start])
		last = r.End()
		var val string
		switch {
		case !r.Closed:
			return "", fmt.Errorf("server %q: %s: malformed placeholder %q: missing '}'", server, field, r.Text)
		case r.Text == placeholder.Root:
			val = v.root
			if val == "" {
				return "", fmt.Errorf("server %q: %s: ${mcpx.root} is empty: this call's scope has no root (global, session, pid and call scopes have none, and a call without a cwd degrades to call:); use scope worktree, repo or cwd and send a cwd, or remove the placeholder", server, field)
			}
		case r.Text == placeholder.Cwd:
			val = v.cwd
			if val == "" {
				return "", fmt.Errorf("server %q: %s: ${mcpx.cwd} is empty: the caller declared no cwd; send Mcpx-Cwd (the CLI sends $PWD) or remove the placeholder", server, field)
			}
		case r.Text == placeholder.Instance:
			val = v.instance
		case r.Text == placeholder.Index:
			val = strconv.Itoa(v.index)
		case r.Text == placeholder.Key:
			val = SafeKey(v.key)
		case r.Text == placeholder.TmpDir:
			val = v.tmpdir
			if val == "" {
				return "", fmt.Errorf("server %q: %s: ${mcpx.tmpdir} has no directory yet; this is a bug in mcpx", server, field)
			}
		default:
			name, ok := r.Alloc()
			if !ok {
				return "", fmt.Errorf("server %q: %s: unknown placeholder %s (%s)", server, field, r.Text, placeholder.Known)
			}
			if val, ok = v.alloc[name]; !ok {
				return "", fmt.Errorf("server %q: %s: %s names no allocation; declare it in the server's allocate block, e.g. \"allocate\": {%q: {\"range\": [9222, 9299]}}", server, field, r.Text, name)
			}
		}
		b.WriteString(val)
	}
	if last == 0 {
		return s, nil // no placeholders: no copy
	}
	b.WriteString(s[last:])
	return b.String(), nil
}

// spawnSpec is a server definition with placeholders substituted: what is
// actually started for one instance.
type spawnSpec struct {
	command    string
	path       string // the command found on the child's PATH, set at start; "" = exec looks it up
	args       []string
	env        []string // KEY=VALUE, appended to the inherited environment
	devEnv     []string // KEY=VALUE of the execution environment (Options.Resolve), under env
	wrap       []string // the argv that starts command (Program.Wrap), if any
	isolated   bool     // devEnv's PATH replaces the daemon's (Program.Isolated)
	inherit    []string // names of the daemon's variables passed beyond the allowlist
	inheritAll bool     // pass the daemon's whole environment
	cwd        string
	cwdSource  CwdSource
	url        string
	headers    map[string]string
}

// resolveSpawn substitutes placeholders in every field of def that may hold
// them and applies the cwd rule.
func resolveSpawn(def *Server, v vars) (spawnSpec, error) {
	var sp spawnSpec
	var err error
	sub := func(s, field string) string {
		if err != nil {
			return ""
		}
		var out string
		out, err = substitute(s, v, def.Name, field)
		return out
	}
	sp.command = sub(def.Command, "command")
	for i, a := range def.Args {
		sp.args = append(sp.args, sub(a, fmt.Sprintf("args[%d]", i)))
	}
	for _, k := range sortedKeys(def.Env) {
		sp.env = append(sp.env, k+"="+sub(def.Env[k], "env."+k))
	}
	sp.inherit, sp.inheritAll = def.InheritEnv, def.InheritAllEnv
	cwd := sub(def.Cwd, "cwd")
	sp.url = sub(def.URL, "url")
	if len(def.Headers) > 0 {
		sp.headers = make(map[string]string, len(def.Headers))
		for _, k := range sortedKeys(def.Headers) {
			sp.headers[k] = sub(def.Headers[k], "headers."+k)
		}
	}
	if err != nil {
		return spawnSpec{}, err
	}
	if cwd != "" && !filepath.IsAbs(cwd) {
		return spawnSpec{}, fmt.Errorf("server %q: cwd: %q is not absolute after substitution; use an absolute path or ${mcpx.root}/sub", def.Name, cwd)
	}
	sp.cwd, sp.cwdSource = SpawnCwd(cwd, v.root)
	return sp, nil
}

// checkDir tells a missing working directory apart from a missing command:
// exec reports both as "no such file or directory".
func checkDir(sp spawnSpec) error {
	if sp.cwd == "" {
		return nil
	}
	fi, err := os.Stat(sp.cwd)
	switch {
	case err != nil:
		return fmt.Errorf("working directory %q (from %s) does not exist; fix the server's cwd, or recreate the directory", sp.cwd, sp.cwdSource)
	case !fi.IsDir():
		return fmt.Errorf("working directory %q (from %s) is not a directory", sp.cwd, sp.cwdSource)
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// environ is the environment a child of sp gets: what proc.Environ
// allows of base (the daemon's), sp's execution environment and its own
// variables, then extra.
func (sp spawnSpec) environ(base []string, extra ...string) []string {
	return proc.Environ(base, proc.Env{Inherit: sp.inherit, InheritAll: sp.inheritAll, Dev: sp.devEnv, Isolated: sp.isolated, Set: sp.env}, extra...)
}

// childPath is the PATH a child of sp gets.
func childPath(base []string, sp spawnSpec) string { return proc.PathOf(sp.environ(base)) }

// procCommand is what starts sp's child, its environment made from base.
func (sp spawnSpec) procCommand(base []string) proc.Command {
	env := sp.environ(base)
	name := sp.command
	if len(sp.devEnv) > 0 && !strings.Contains(name, "/") {
		// A command the execution environment provides is looked up in
		// the child's PATH, not the daemon's.
		if found := proc.LookPath(name, env); found != "" {
			name = found
		} else if sp.isolated {
			// Never the daemon's PATH: exec fails on what is not there.
			name = filepath.Join(proc.PathOf(env), name)
		}
	}
	path := name
	if sp.path != "" {
		path = sp.path // found on the child's own PATH (execid), not the daemon's
	}
	if len(sp.wrap) > 0 {
		// The wrapper execs the very file identified, with the arguments.
		wrapper := sp.wrap[0]
		if found := proc.LookPath(wrapper, env); found != "" && !strings.Contains(wrapper, "/") {
			wrapper = found
		}
		args := append(append(slices.Clone(sp.wrap), path), sp.args...)
		return proc.Command{Path: wrapper, Args: args, Dir: sp.cwd, Env: env}
	}
	return proc.Command{Path: path, Args: append([]string{name}, sp.args...), Dir: sp.cwd, Env: env}
}
