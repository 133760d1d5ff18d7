package config

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"mcpx.dev/mcpx/internal/suggest"
	"mcpx.dev/mcpx/nixresolve/nixspec"
)

// Script is the "script" block: what `mcpx run` and `mcpx exec` put around
// every script they run. Each layer of the config chain may set it;
// MergeLines folds the layers.
//
//	"script": {"prefix": [null, "console.time('run')"], "suffix": ["console.timeEnd('run')", null]}
type Script struct {
	// Prefix lines run before the script's own top-level code; Suffix
	// lines in a finally after it has run.
	//
	// They are one module with the script: prefix lines at its top, then
	// the script's source, then the suffix lines in a function the
	// launcher calls (see package scripts).
	Prefix Lines `json:"prefix,omitzero"`
	Suffix Lines `json:"suffix,omitzero"`
	// Interpreter runs a file of an extension (".py") that is not
	// JavaScript or TypeScript: a command, split at spaces, given the
	// file and its arguments ("python3 -u"). It wins over the file's
	// shebang line. Nearer layers win per extension.
	Interpreter map[string]string `json:"interpreter,omitzero"`
	// Env is environment every script gets (KEY: value). Nearer layers
	// win per variable; --env wins over all.
	Env map[string]string `json:"env,omitzero"`
	// Deps say where a script's packages come from (see ScriptDeps).
	Deps ScriptDeps `json:"deps,omitzero"`
	// Environment is the script's execution environment: "host" (the
	// caller's, the default), "flake:<ref>[#attr]" (a devShell),
	// "shell:<file>" (a legacy shell.nix; relative to the config file's
	// directory) or "auto" (the run directory's flake.nix, else its
	// shell.nix, else the host) or "isolated" (EnvironmentIsolated: only
	// a nix: runtime's package and Dependencies, none of the caller's
	// PATH). The nearest layer that sets it wins.
	Environment string `json:"environment,omitempty"`
	// Dependencies are the nix: packages an isolated environment holds
	// beside a nix: runtime's (or interpreter's); a relative path ref is
	// the config file's directory's. The nearest layer that sets it wins.
	Dependencies []string `json:"dependencies,omitempty"`
	// Runtime is the JavaScript runtime scripts run on: "deno", "bun",
	// "node", a path to one's binary, or a nix: spec that builds one
	// ("nix:nixpkgs#deno"; a relative path ref is the config file's
	// directory's). --runtime and $MCPX_RUNTIME win over it; the nearest
	// layer that sets it wins.
	Runtime string `json:"runtime,omitempty"`
}

// scriptRuntimes are the names script.runtime may be, besides a path or a
// nix: spec. (Package scripts has the same list: config cannot import it.)
var scriptRuntimes = []string{"deno", "bun", "node"}

// ScriptDeps is script.deps: where the packages a script imports come
// from. Each field is the nearest layer's that sets it; Packages merge per
// name, nearer winning.
//
//	"deps": {"from": ["specifiers", "manifest", "host"], "packages": {"is-number": "7.0.0"}}
type ScriptDeps struct {
	// From are the sources packages may come from (DepSources); nil = all.
	From []string `json:"from,omitzero"`
	// Packages are packages (name: version range) every script may import
	// by name.
	Packages map[string]string `json:"packages,omitzero"`
	// Registry is the npm registry packages are installed from; "" = npm's
	// own setting.
	Registry string `json:"registry,omitempty"`
}

// DepSources are the sources of script.deps.from: npm:/jsr: specifiers in
// the script, script.deps.packages, the nearest package.json/deno.json
// above the script, the package.json beside a config file of the chain,
// and node_modules directories already on the host.
var DepSources = []string{"specifiers", "packages", "manifest", "config", "host"}

// Lines is one layer's value of a layered list of source lines. nil: the
// layer does not set it, and inherits it as it is. Otherwise each entry is
// a line, or nil for the inherited lines spliced in at that position; a
// list without nil replaces what it inherits ([] clears it).
type Lines []*string

// Over returns l applied over the lines it inherits.
func (l Lines) Over(inherited []string) []string {
	if l == nil {
		return inherited
	}
	out := []string{}
	for _, s := range l {
		if s == nil {
			out = append(out, inherited...)
		} else {
			out = append(out, *s)
		}
	}
	return out
}

// MergeLines folds layers, nearest first (the chain's order), from the
// farthest inward: each applies Over what the layers beyond it give.
func MergeLines(layers []Lines) []string {
	var out []string
	for i := len(layers) - 1; i >= 0; i-- {
		out = layers[i].Over(out)
	}
	return out
}

var scriptFields = []string{"prefix", "suffix", "interpreter", "env", "deps", "environment", "dependencies", "runtime"}

func (p *problems) decodeScript(sc *Script, raw json.RawMessage) {
	if isNull(raw) {
		return
	}
	members, err := objectMembers(raw)
	if err != nil {
		p.add("", "script", "script must be an object", `such as {"prefix": [null, "console.time('run')"]}`)
		return
	}
	for _, m := range members {
		switch m.key {
		case "prefix":
			sc.Prefix = p.decodeLines("script.prefix", m.value)
		case "suffix":
			sc.Suffix = p.decodeLines("script.suffix", m.value)
		case "interpreter":
			sc.Interpreter = p.decodeInterpreters(m.value)
		case "env":
			sc.Env = p.decodeScriptEnv(m.value)
		case "deps":
			sc.Deps = p.decodeScriptDeps(m.value)
		case "environment":
			sc.Environment = p.decodeScriptEnvironment(m.value)
		case "runtime":
			sc.Runtime = p.decodeScriptRuntime(m.value)
		case "dependencies":
			sc.Dependencies = p.decodeScriptDependencies(m.value)
		default:
			hint := "the fields are prefix, suffix, interpreter, env, deps, environment, dependencies and runtime"
			if s := suggest.Closest(m.key, scriptFields); s != "" {
				hint = fmt.Sprintf("did you mean %q?", s)
			}
			p.add("", "script."+m.key, fmt.Sprintf("unknown field %q", "script."+m.key), hint)
		}
	}
}

// decodeLines reads a list of strings and nulls; null as the whole value
// is the same as leaving it out.
func (p *problems) decodeLines(field string, raw json.RawMessage) Lines {
	if isNull(raw) {
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		p.add("", field, field+" must be a list of strings and nulls (null: the inherited lines, spliced in there)",
			`such as [null, "console.time('run')"]`)
		return nil
	}
	out := Lines{}
	for i, it := range items {
		if isNull(it) {
			out = append(out, nil)
			continue
		}
		var s string
		if err := json.Unmarshal(it, &s); err != nil {
			p.add("", fmt.Sprintf("%s[%d]", field, i), fmt.Sprintf("%s[%d] is %s, not a string or null", field, i, it),
				"write the line as a JSON string, or null for the inherited lines")
			continue
		}
		out = append(out, &s)
	}
	return out
}

// jsExtensions are the extensions a JS runtime runs; an interpreter is
// never configured for one. (Package scripts has the same list: config
// cannot import it.)
var jsExtensions = []string{".ts", ".mts", ".cts", ".tsx", ".js", ".mjs", ".cjs", ".jsx"}

// decodeInterpreters reads script.interpreter: {".py": "python3"}.
func (p *problems) decodeInterpreters(raw json.RawMessage) map[string]string {
	m := p.decodeStringMap("script.interpreter", raw, `such as {".py": "python3", ".rb": "ruby -w"}`)
	for _, ext := range slices.Sorted(maps.Keys(m)) {
		cmd := m[ext]
		field := fmt.Sprintf("script.interpreter[%q]", ext)
		switch {
		case len(ext) < 2 || ext[0] != '.' || strings.ContainsAny(ext[1:], "./\\ "):
			p.add("", field, fmt.Sprintf("%s: %q is not a file extension", field, ext), `write it with its dot, such as ".py"`)
		case slices.Contains(jsExtensions, ext):
			p.add("", field, fmt.Sprintf("%s: %s files run on the JavaScript runtime (--runtime, $MCPX_RUNTIME)", field, ext), "remove it")
		case strings.TrimSpace(cmd) == "":
			p.add("", field, field+" is empty", `name the command, such as "python3"`)
		}
	}
	return m
}

// decodeScriptEnv reads script.env: {"KEY": "value"}.
func (p *problems) decodeScriptEnv(raw json.RawMessage) map[string]string {
	m := p.decodeStringMap("script.env", raw, `such as {"REPORT_DIR": "/tmp/reports"}`)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			p.add("", fmt.Sprintf("script.env[%q]", k), fmt.Sprintf("script.env: %q is not a variable name", k), "a name has no = and is not empty")
		}
	}
	return m
}

// decodeScriptDeps reads script.deps.
func (p *problems) decodeScriptDeps(raw json.RawMessage) ScriptDeps {
	var d ScriptDeps
	if isNull(raw) {
		return d
	}
	members, err := objectMembers(raw)
	if err != nil {
		p.add("", "script.deps", "script.deps must be an object", `such as {"from": ["specifiers", "manifest"], "packages": {"is-number": "7.0.0"}}`)
		return d
	}
	for _, m := range members {
		switch m.key {
		case "from":
			if isNull(m.value) {
				continue
			}
			if err := json.Unmarshal(m.value, &d.From); err != nil {
				p.add("", "script.deps.from", "script.deps.from must be a list of strings", fmt.Sprintf("name sources of %s", strings.Join(DepSources, ", ")))
				continue
			}
			for i, s := range d.From {
				if !slices.Contains(DepSources, s) {
					hint := "the sources are " + strings.Join(DepSources, ", ")
					if c := suggest.Closest(s, DepSources); c != "" {
						hint = fmt.Sprintf("did you mean %q?", c)
					}
					p.add("", fmt.Sprintf("script.deps.from[%d]", i), fmt.Sprintf("script.deps.from[%d]: unknown source %q", i, s), hint)
				}
			}
		case "packages":
			d.Packages = p.decodeStringMap("script.deps.packages", m.value, `such as {"is-number": "7.0.0", "@scope/pkg": "^1.2"}`)
			for _, name := range slices.Sorted(maps.Keys(d.Packages)) {
				if !validPackageName(name) {
					p.add("", fmt.Sprintf("script.deps.packages[%q]", name), fmt.Sprintf("script.deps.packages: %q is not an npm package name", name),
						`a name is like "is-number" or "@scope/pkg"; put the version in the value`)
				}
			}
		case "registry":
			if err := json.Unmarshal(m.value, &d.Registry); err != nil || (d.Registry != "" && !strings.HasPrefix(d.Registry, "http://") && !strings.HasPrefix(d.Registry, "https://")) {
				p.add("", "script.deps.registry", fmt.Sprintf("script.deps.registry must be an http(s) URL, not %s", m.value), `such as "https://registry.npmjs.org/"`)
			}
		default:
			hint := "the fields are from, packages and registry"
			if s := suggest.Closest(m.key, []string{"from", "packages", "registry"}); s != "" {
				hint = fmt.Sprintf("did you mean %q?", s)
			}
			p.add("", "script.deps."+m.key, fmt.Sprintf("unknown field %q", "script.deps."+m.key), hint)
		}
	}
	return d
}

// validPackageName reports whether name is an npm package name: a
// lower-case name, or @scope/name, of no path beyond that.
func validPackageName(name string) bool {
	scope, rest, scoped := strings.Cut(name, "/")
	if scoped {
		if len(scope) < 2 || scope[0] != '@' || strings.Contains(rest, "/") {
			return false
		}
		name = rest
	} else if strings.HasPrefix(name, "@") {
		return false
	}
	return name != "" && name[0] != '.' && name[0] != '_' && !strings.ContainsAny(name, " @:\\%") && strings.ToLower(name) == name
}

// decodeScriptEnvironment reads script.environment.
func (p *problems) decodeScriptEnvironment(raw json.RawMessage) string {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		p.add("", "script.environment", fmt.Sprintf("script.environment must be a string, not %s", raw), `such as "auto", "shell:shell.nix" or "flake:.#dev"`)
		return ""
	}
	if s == "auto" {
		return s
	}
	if strings.HasPrefix(s, EnvironmentIsolated+":") {
		p.add("", "script.environment", fmt.Sprintf("script.environment %q: an isolated environment's packages are script.dependencies", s),
			`write "environment": "isolated" and list the nix: packages in "dependencies"`)
		return ""
	}
	if _, err := nixspec.ParseEnvironment(s); err != nil {
		p.add("", "script.environment", "script.environment: "+err.Error(), `or "auto": the run directory's flake.nix, else its shell.nix, else the host`)
		return ""
	}
	return s
}

// decodeScriptDependencies reads script.dependencies: nix: specs.
func (p *problems) decodeScriptDependencies(raw json.RawMessage) []string {
	var specs []string
	if err := json.Unmarshal(raw, &specs); err != nil {
		p.add("", "script.dependencies", fmt.Sprintf("script.dependencies must be an array of nix: specs, not %s", raw), `such as ["nix:nixpkgs#jq"]`)
		return nil
	}
	for i, s := range specs {
		if _, err := nixspec.Parse(s); err != nil {
			p.add("", fmt.Sprintf("script.dependencies[%d]", i), err.Error(), `write it as nix:<flakeref>#<attr>, e.g. "nix:nixpkgs#jq" or "nix:path:./tools#lint"`)
		}
	}
	return specs
}

// decodeScriptRuntime reads script.runtime.
func (p *problems) decodeScriptRuntime(raw json.RawMessage) string {
	const hint = `name deno, bun or node, a path to one's binary, or a nix: spec that builds one, such as "nix:nixpkgs#deno"`
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		p.add("", "script.runtime", fmt.Sprintf("script.runtime must be a string, not %s", raw), hint)
		return ""
	}
	switch {
	case nixspec.Is(s):
		if _, err := nixspec.Parse(s); err != nil {
			p.add("", "script.runtime", "script.runtime: "+err.Error(), hint)
			return ""
		}
	case !slices.Contains(scriptRuntimes, s) && !strings.Contains(s, "/"):
		msg := fmt.Sprintf("script.runtime: %q is not a runtime", s)
		if c := suggest.Closest(s, scriptRuntimes); c != "" {
			msg += fmt.Sprintf("; did you mean %q?", c)
		}
		p.add("", "script.runtime", msg, hint)
		return ""
	}
	return s
}

// decodeStringMap reads an object of strings; null is the same as leaving
// it out.
func (p *problems) decodeStringMap(field string, raw json.RawMessage, example string) map[string]string {
	if isNull(raw) {
		return nil
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		p.add("", field, field+" must be an object of strings", example)
		return nil
	}
	return m
}

// LoadScriptTrusted reads only the "script" block of the config file at
// path, as `mcpx run` does for each file of the chain (the file's other
// fields are the daemon's), if ReadTrusted trusts it for the user uid: an
// untrusted file returns its *UntrustedError (and no Script), a missing
// one nothing, and any other error names the file and field.
func LoadScriptTrusted(path string, uid int) (Script, error) {
	data, _, err := ReadTrusted(path, uid)
	if errors.Is(err, fs.ErrNotExist) {
		return Script{}, nil
	}
	var untrusted *UntrustedError
	if errors.As(err, &untrusted) {
		return Script{}, err
	}
	if err != nil {
		return Script{}, &Problem{Op: "load config", Err: err, Msg: fmt.Sprintf("reading config file %s: %v", path, err)}
	}
	return ParseScript(data, path)
}

// ParseScript parses the "script" block of a config file's content (data,
// read from source).
func ParseScript(data []byte, path string) (Script, error) {
	var p problems
	members, err := objectMembers(data)
	if err != nil {
		p.syntax(data, err)
		return Script{}, p.err(path)
	}
	var sc Script
	for _, m := range members {
		if m.key == "script" {
			p.decodeScript(&sc, m.value)
		}
	}
	return sc, p.err(path)
}

// MergeDeps folds script.deps layers, nearest first: From and Registry
// are the nearest layer's that sets them, Packages merge per name.
func MergeDeps(layers []ScriptDeps) ScriptDeps {
	var out ScriptDeps
	pkgs := make([]map[string]string, len(layers))
	for i, l := range layers {
		if out.From == nil {
			out.From = l.From
		}
		out.Registry = cmp.Or(out.Registry, l.Registry)
		pkgs[i] = l.Packages
	}
	out.Packages = MergeMaps(pkgs)
	return out
}

// MergeMaps folds per-key layers, nearest first: a nearer layer's key wins.
func MergeMaps(layers []map[string]string) map[string]string {
	out := map[string]string{}
	for i := len(layers) - 1; i >= 0; i-- {
		maps.Copy(out, layers[i])
	}
	return out
}
