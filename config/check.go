package config

import (
	"cmp"
	"fmt"
	"iter"
	"maps"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"mcpx.dev/mcpx/internal/defaults"
	"mcpx.dev/mcpx/internal/placeholder"
	"mcpx.dev/mcpx/internal/suggest"
	"mcpx.dev/mcpx/nixresolve/nixspec"
)

var (
	serverName   = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	notNameChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)
)

// IsServerName says whether name is a valid server name: letters, digits,
// _ and -. A recipe's directory (scripts/<server>/) is named so too.
func IsServerName(name string) bool { return serverName.MatchString(name) }

var scopeKinds = []ScopeKind{ScopeGlobal, ScopeRepo, ScopeWorktree, ScopeCwd, ScopeSession, ScopeParentSession, ScopePid, ScopeCall}

// transportTypes are the client formats' "type" values: what each requires.
// "streamableHttp" is Cline's spelling. The legacy SSE transport ("sse") is
// refused: mcpx speaks streamable HTTP only, and an SSE endpoint answers its
// POST with an error or a stream that never carries the answer.
var transportTypes = map[string]string{"stdio": "command", "http": "url", "streamable-http": "url", "streamableHttp": "url"}

func (p *problems) checkPool(pc *Pool) {
	if pc.MaxInstances < 0 {
		p.add("", "pool.maxInstances", fmt.Sprintf("maxInstances is %d", pc.MaxInstances), fmt.Sprintf("use 0 for the default (%d) or a positive number", defaults.MaxInstances))
	} else if pc.MaxInstances == 0 {
		pc.MaxInstances = defaults.MaxInstances
	}
	p.duration("", "pool.idleTimeout", &pc.IdleTimeout.Default, defaults.IdleTimeout)
	p.checkPoolLife(pc)
	p.checkPoolScopePolicy(pc)
	p.duration("", "pool.reapInterval", &pc.ReapInterval, defaults.ReapInterval)
	p.duration("", "pool.waitTimeout", &pc.WaitTimeout, defaults.WaitTimeout)
	if pc.ExecWatch == 0 {
		pc.ExecWatch = Period(defaults.ExecWatch)
	}
}

func (p *problems) checkLimits(lc *Limits) {
	if lc.MaxDepth < 0 {
		p.add("", "limits.maxDepth", fmt.Sprintf("maxDepth is %d", lc.MaxDepth), fmt.Sprintf("use 0 for the default (%d) or a positive number", DefaultMaxDepth))
	} else if lc.MaxDepth == 0 {
		lc.MaxDepth = DefaultMaxDepth
	}
	if lc.MaxMessageBytes < 0 {
		p.add("", "limits.maxMessageBytes", fmt.Sprintf("maxMessageBytes is %d", lc.MaxMessageBytes), fmt.Sprintf("use 0 for the default (%d) or a positive number of bytes", defaults.MaxMessageBytes))
	} else if lc.MaxMessageBytes == 0 {
		lc.MaxMessageBytes = defaults.MaxMessageBytes
	}
	p.duration("", "limits.rootsWait", &lc.RootsWait, defaults.RootsWait)
	p.duration("", "limits.inputWait", &lc.InputWait, DefaultInputWait)
	if lc.ExecHashMax < 0 {
		p.add("", "limits.execHashMax", fmt.Sprintf("execHashMax is %d", lc.ExecHashMax), fmt.Sprintf("use 0 for the default (%d) or a positive number of bytes", defaults.ExecHashMax))
	} else if lc.ExecHashMax == 0 {
		lc.ExecHashMax = defaults.ExecHashMax
	}
	p.checkBurst("", "limits.ownerBurst", lc.OwnerBurst, lc.OwnerRate, "limits.ownerRate")
}

func (p *problems) checkNix(nc *Nix) {
	p.duration("", "nix.timeout", &nc.Timeout, defaults.NixTimeout)
	switch nc.Refresh {
	case "":
		nc.Refresh = NixRefreshNever
	case NixRefreshNever, NixRefreshOnReload:
	default:
		if d, err := time.ParseDuration(nc.Refresh); err != nil || d < MinNixRefreshInterval {
			p.add("", "nix.refresh", fmt.Sprintf("unknown refresh policy %q", nc.Refresh),
				fmt.Sprintf(`use "never" (the default), "on-reload", or an interval of at least %s such as "1h"`, MinNixRefreshInterval))
		}
	}
	for i, l := range nc.Config {
		if strings.ContainsAny(l, "\n\x00") {
			p.add("", fmt.Sprintf("nix.config[%d]", i), "a nix.conf line holds a newline or NUL", "write one setting per array element")
		}
	}
}

func (p *problems) checkRecords(rc *Records) {
	if rc.Enabled == nil {
		on := true
		rc.Enabled = &on
	}
	if rc.MaxBytes < 0 {
		p.add("", "records.maxBytes", fmt.Sprintf("maxBytes is %d", rc.MaxBytes), fmt.Sprintf("use 0 for the default (%d) or a positive number of bytes", defaults.RecordsMaxBytes))
	} else if rc.MaxBytes == 0 {
		rc.MaxBytes = defaults.RecordsMaxBytes
	} else if rc.MaxBytes < minRecordsBytes {
		p.add("", "records.maxBytes", fmt.Sprintf("maxBytes is %d, too small to hold a record", rc.MaxBytes), fmt.Sprintf("use at least %d, or 0 for the default (%d)", minRecordsBytes, defaults.RecordsMaxBytes))
	}
	if rc.MaxFiles < 0 {
		p.add("", "records.maxFiles", fmt.Sprintf("maxFiles is %d", rc.MaxFiles), fmt.Sprintf("use 0 for the default (%d) or a positive number", defaults.RecordsMaxFiles))
	} else if rc.MaxFiles == 0 {
		rc.MaxFiles = defaults.RecordsMaxFiles
	}
	p.duration("", "records.maxAge", &rc.MaxAge, defaults.RecordsMaxAge)
}

// minRecordsBytes is the smallest records.maxBytes: a file that cannot
// hold a few records would rotate on every call.
const minRecordsBytes = 4096

// checkNixCommand checks a nix:<flakeref>#attr command. It may hold no
// placeholder: a flake under a caller's root or cwd would be code from the
// caller's project run as the daemon's owner, and resolutions are cached
// per spec, not per instance.
func (p *problems) checkNixCommand(name, command string) {
	if !nixspec.Is(command) {
		return
	}
	if strings.Contains(command, "${mcpx.") {
		p.add(name, "command", "a nix: command may not hold ${mcpx.*} placeholders",
			"name a flake the daemon's owner controls (a path, git or github ref); project files under a caller's directory are never run")
		return
	}
	if _, err := nixspec.Parse(command); err != nil {
		p.add(name, "command", err.Error(), "write it as nix:<flakeref>#<attr>, e.g. nix:github:owner/repo#tool or nix:path:/src/tool#tool")
	}
}

// checkEnvironment checks a server's execution environment: host, a
// flake's devShell or a shell.nix. Like a nix: command it may hold no
// placeholder, and only a command server has one.
func (p *problems) checkEnvironment(name string, s *Server) {
	if s.Environment == "" {
		return
	}
	if s.URL != "" {
		p.add(name, "environment", "a url server has no execution environment", "remove environment, or use a command")
		return
	}
	if strings.Contains(s.Environment, "${mcpx.") {
		p.add(name, "environment", "an environment may not hold ${mcpx.*} placeholders",
			"name a flake or shell.nix the daemon's owner controls; project files under a caller's directory are never run")
		return
	}
	switch {
	case s.Environment == EnvironmentAuto:
	case s.Environment == EnvironmentIsolated:
		p.checkIsolated(name, s)
	case strings.HasPrefix(s.Environment, EnvironmentIsolated+":"):
		p.add(name, "environment", fmt.Sprintf("environment %q: an isolated environment's packages are its dependencies", s.Environment),
			`write "environment": "isolated" and list the nix: packages in "dependencies"`)
	default:
		if _, err := nixspec.ParseEnvironment(s.Environment); err != nil {
			p.add(name, "environment", err.Error(), `e.g. "host", "auto" (the child's directory's flake.nix or shell.nix), "isolated" (only its nix: packages), "flake:path:/src/app#dev" or "shell:/src/app/shell.nix"`)
		}
	}
}

// checkDependencies checks a server's dependencies: nix: specs, and only
// beside an isolated environment.
func (p *problems) checkDependencies(name string, s *Server) {
	if s.Dependencies == nil {
		return
	}
	if s.Environment != EnvironmentIsolated {
		p.add(name, "dependencies", "dependencies are the packages of an isolated environment, and this server's environment is not one",
			`set "environment": "isolated", or remove dependencies`)
		return
	}
	for i, d := range s.Dependencies {
		field := fmt.Sprintf("dependencies[%d]", i)
		switch _, err := nixspec.Parse(d); {
		case strings.Contains(d, "${mcpx."):
			p.add(name, field, "a dependency may not hold ${mcpx.*} placeholders", "name a flake the daemon's owner controls")
		case err != nil:
			p.add(name, field, err.Error(), `write it as nix:<flakeref>#<attr>, e.g. "nix:nixpkgs#jq" or "nix:path:/src/tools#lint"`)
		}
	}
}

// checkIsolated checks an isolated server: it is a command server, and
// its command is in the environment — a nix: spec, or a name one of its
// dependencies provides (which only the build can tell).
func (p *problems) checkIsolated(name string, s *Server) {
	switch {
	case s.OpenAPI != nil || s.CLI != nil:
		p.add(name, "environment", "an isolated environment is for a command server; an adapter has none", `remove environment, or use "host"`)
	case s.Command != "" && !nixspec.Is(s.Command) && !strings.Contains(s.Command, "/") && len(s.Dependencies) == 0:
		p.add(name, "dependencies", fmt.Sprintf("the isolated environment holds no package, so command %q is not in it", s.Command),
			fmt.Sprintf(`list the nix: package that provides %s in dependencies (e.g. "nix:nixpkgs#%s"), or make the command a nix: spec`, s.Command, s.Command))
	case s.Env["PATH"] != "":
		p.add(name, "env.PATH", "an isolated environment's PATH is its packages' bin directories", `remove env.PATH, or use another environment`)
	}
}

// duration rejects a negative *d and replaces zero with def.
func (p *problems) duration(server, field string, d *Duration, def time.Duration) {
	switch {
	case *d < 0:
		p.add(server, field, fmt.Sprintf("negative duration %s", d), fmt.Sprintf(`use a positive duration, or leave it out for the default (%s)`, def))
	case *d == 0:
		*d = Duration(def)
	}
}

// checkServer validates s and fills in its defaults. typ is the transport a
// client format names (zero if none); fields in bad failed to decode and are
// skipped.
func (p *problems) checkServer(name string, s *Server, typ transport, pc *Pool, bad map[string]bool) {
	s.Name = name
	if !serverName.MatchString(name) {
		hint := "names may use only letters, digits, _ and - (they appear in URLs and in server.tool arguments)"
		if alt := nameFor(name); alt != "" {
			hint = fmt.Sprintf("rename it, say to %q; ", alt) + hint
		}
		p.add(name, "", "invalid server name", hint)
	}
	if s.OpenAPI != nil {
		p.checkOpenAPI(name, s)
	} else {
		p.checkTransport(name, s, typ, bad)
	}
	p.checkEnvironment(name, s)
	p.checkDependencies(name, s)
	p.checkStrings(name, s)
	if s.Cwd != "" && !hasAbsPrefix(s.Cwd) && placeholderProblems(s.Cwd, s.Allocate) == nil {
		p.add(name, "cwd", fmt.Sprintf("cwd %q is relative", s.Cwd),
			fmt.Sprintf("use an absolute path, or %s/%s for a directory under the instance root", placeholder.Root, strings.TrimPrefix(s.Cwd, "./")))
	}
	p.checkChoices(name, s)
	p.checkScopePolicy(name, s)
	p.checkRootPlaceholder(name, s)
	p.checkDocs(name, s)
	if s.Max < 0 {
		p.add(name, "max", fmt.Sprintf("max is %d", s.Max), fmt.Sprintf("use 0 for the default (%d) or a positive number", defaults.Max))
	} else if s.Max == 0 {
		s.Max = defaults.Max
	}
	p.checkAllocate(name, s)
	p.checkReady(name, s)
	p.checkOAuth(name, s)
	p.duration(name, "idleTimeout", &s.IdleTimeout, cmp.Or(pc.IdleTimeout.For(s.Scope), defaults.IdleTimeout))
	p.checkLife(name, s, pc)
	p.duration(name, "callTimeout", &s.CallTimeout, DefaultCallTimeout)
	p.duration(name, "startTimeout", &s.StartTimeout, defaults.StartTimeout)
	p.checkServerLimits(name, s)
}

// checkDocs checks what a server's config says to callers about its tools:
// the prelude and the tags.
func (p *problems) checkDocs(name string, s *Server) {
	if len(s.Prelude) > MaxPreludeBytes {
		p.add(name, "prelude", fmt.Sprintf("the prelude is %d bytes, over the limit of %d", len(s.Prelude), MaxPreludeBytes),
			"keep it to what the tools' descriptions omit, such as how to obtain an id")
	}
	if i := strings.IndexFunc(s.Prelude, func(r rune) bool {
		return r == utf8.RuneError || (unicode.IsControl(r) && r != '\n' && r != '\t')
	}); i >= 0 {
		p.add(name, "prelude", fmt.Sprintf("the prelude holds a control character or invalid UTF-8 at byte %d", i),
			"write plain text; newlines and tabs are allowed")
	}
	for i, tag := range s.Tags {
		p.checkTag(name, fmt.Sprintf("tags[%d]", i), tag)
	}
	for _, tool := range slices.Sorted(maps.Keys(s.ToolTags)) {
		if tool == "" {
			p.add(name, "toolTags", "a tool name is empty", "key toolTags by the tool names the server lists (`mcpx tools "+name+"`)")
		}
		for i, tag := range s.ToolTags[tool] {
			p.checkTag(name, fmt.Sprintf("toolTags.%s[%d]", tool, i), tag)
		}
	}
}

// checkTag checks one tag: a search term, so one word with no space.
func (p *problems) checkTag(name, field, tag string) {
	if tag == "" || strings.IndexFunc(tag, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		p.add(name, field, fmt.Sprintf("tag %q is empty or holds a space", tag), `a tag is one word, such as "files" or "read-only"`)
	}
}

// nameFor suggests a valid name for an invalid one: Cline names servers it
// installs by their repository path, "github.com/owner/repo/tree/main/src/git".
func nameFor(name string) string {
	base := name[strings.LastIndexByte(name, '/')+1:]
	alt := strings.Trim(notNameChars.ReplaceAllString(base, "-"), "-")
	if alt == name {
		return ""
	}
	return alt
}

// checkTransport enforces exactly one of command and url, agreement with the
// transport a client format names, and fields that belong to the other one.
func (p *problems) checkTransport(name string, s *Server, t transport, bad map[string]bool) {
	typ := t.value
	hasCmd, hasURL := s.Command != "", s.URL != ""
	p.checkNixCommand(name, s.Command)
	kinds := s.kinds()
	switch {
	case hasCmd && hasURL:
		p.add(name, "url", "both command and url are set", "a server is either a command (stdio) or a url (streamable HTTP): remove one")
	case len(kinds) > 1:
		p.add(name, kinds[1], fmt.Sprintf("both %s and %s are set", kinds[0], kinds[1]), "a server is one of a command (stdio), a url (streamable HTTP), an openapi service or a cli block: remove one")
	case len(kinds) == 0 && !bad["command"] && !bad["url"] && !bad["openapi"] && !bad["cli"]:
		p.add(name, "command", "neither command nor url is set (nor openapi, nor cli)", `set "command" for a stdio server, "url" for a streamable-HTTP server, "openapi" for an OpenAPI service or "cli" for command lines as tools`)
	}
	if s.OpenAPI != nil || s.CLI != nil {
		p.checkAdapter(name, s, t)
		return
	}
	if typ != "" && !bad["type"] {
		need, ok := transportTypes[typ]
		switch {
		case typ == "sse":
			p.add(name, t.field, `the legacy SSE transport is not supported: mcpx speaks streamable HTTP only`,
				`use the server's streamable-HTTP endpoint (often /mcp) with type "http"`)
		case !ok:
			p.add(name, t.field, fmt.Sprintf("unknown %s %q", t.field, typ), hintFor(typ, slices.Sorted(maps.Keys(transportTypes)), "types"))
		case need == "command" && !hasCmd && hasURL:
			p.add(name, t.field, fmt.Sprintf("%s %q needs a command, but url is set", t.field, typ), fmt.Sprintf(`use %s "http" for a url server`, t.field))
		case need == "url" && !hasURL && hasCmd:
			p.add(name, t.field, fmt.Sprintf("%s %q needs a url, but command is set", t.field, typ), fmt.Sprintf(`use %s "stdio" for a command server`, t.field))
		}
	}
	if hasURL && !hasCmd {
		for field, set := range map[string]bool{"args": len(s.Args) > 0, "env": len(s.Env) > 0, "cwd": s.Cwd != "", "inheritEnv": !s.InheritEnv.IsZero()} {
			if set {
				p.add(name, field, field+" is only for command servers", "remove it; a url server is not started by mcpx")
			}
		}
	}
	if hasCmd && !hasURL && len(s.Headers) > 0 {
		p.add(name, "headers", "headers is only for url servers", "remove it, or pass settings to the command in args or env")
	}
	if hasURL {
		p.checkURL(name, s.URL)
		if p.foreign && typ == "" && strings.HasSuffix(strings.TrimRight(s.URL, "/"), "/sse") {
			// Cline reads a url with no type as an SSE server; in mcpx's
			// own format a url is streamable HTTP, whatever its path.
			p.warn(name, "url", fmt.Sprintf("url %q looks like a legacy SSE endpoint; mcpx speaks streamable HTTP only", s.URL),
				`use the server's streamable-HTTP endpoint (often /mcp); if this is one, say so with type "http"`)
		}
	}
}

func (p *problems) checkURL(name, raw string) {
	probe := probeValues(raw)
	u, err := url.Parse(probe)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.add(name, "url", fmt.Sprintf("url %q is not an absolute http(s) URL", raw), "use a streamable-HTTP endpoint such as https://host/mcp")
	}
}

// checkStrings checks placeholders and characters in every string the pool
// will use, naming the field as args[1], env.NAME or headers.NAME.
func (p *problems) checkStrings(name string, s *Server) {
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			p.add(name, "env", fmt.Sprintf("invalid environment variable name %q", k), "names may not be empty or contain = or NUL")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		if !isToken(k) {
			p.add(name, "headers", fmt.Sprintf("invalid header name %q", k), "header names are letters, digits and !#$%&'*+-.^_`|~")
		}
	}
	for field, v := range s.substituted() {
		p.checkString(name, field, v, s.Allocate)
	}
}

// substituted yields every field the pool substitutes placeholders in, named
// as errors name them: command, args[1], env.NAME, cwd, url, headers.NAME.
func (s *Server) substituted() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		if !yield("command", s.Command) {
			return
		}
		for i, a := range s.Args {
			if !yield(fmt.Sprintf("args[%d]", i), a) {
				return
			}
		}
		for _, k := range slices.Sorted(maps.Keys(s.Env)) {
			if !yield("env."+k, s.Env[k]) {
				return
			}
		}
		if !yield("cwd", s.Cwd) || !yield("url", s.URL) {
			return
		}
		for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
			if !yield("headers."+k, s.Headers[k]) {
				return
			}
		}
	}
}

// rootless scopes never give an instance a root.
var rootless = []ScopeKind{ScopeGlobal, ScopeSession, ScopeParentSession, ScopePid, ScopeCall}

// checkRootPlaceholder rejects ${mcpx.root} in a server whose scope never
// has a root (every spawn would fail), and ${mcpx.cwd} in a scope whose key
// is not a directory: there the first caller's cwd would be baked into a
// child that callers in other directories share.
func (p *problems) checkRootPlaceholder(name string, s *Server) {
	if !slices.Contains(rootless, s.Scope) {
		return
	}
	for _, ph := range []string{placeholder.Root, placeholder.Cwd} {
		for field, v := range s.substituted() {
			if strings.Contains(v, ph) {
				what := "has no root"
				if ph == placeholder.Cwd {
					what = "is shared by callers in different directories"
				}
				p.add(name, field, fmt.Sprintf("%s is used, but an instance of scope %q %s", ph, s.Scope, what),
					`use scope "worktree", "repo" or "cwd", or remove the placeholder`)
				break
			}
		}
	}
}

// usesDirPlaceholder reports whether s uses ${mcpx.root} or ${mcpx.cwd}:
// in a client's format, an opt-in to mcpx's scopes.
func (s *Server) usesDirPlaceholder() bool {
	for _, v := range s.substituted() {
		if strings.Contains(v, placeholder.Root) || strings.Contains(v, placeholder.Cwd) {
			return true
		}
	}
	return false
}

func (p *problems) checkString(name, field, v string, allocs map[string]*Alloc) {
	if strings.IndexByte(v, 0) >= 0 {
		p.add(name, field, "contains a NUL byte", "")
	}
	for _, pr := range placeholderProblems(v, allocs) {
		p.add(name, field, pr.msg, pr.hint)
	}
	p.checkClientVars(name, field, v)
}

// clientVar matches the variables VS Code and Cursor expand in their
// configs: ${input:id}, ${env:NAME}, ${workspaceFolder} and the like.
var clientVar = regexp.MustCompile(`\$\{(input:[^}]*|env:[^}]*|config:[^}]*|command:[^}]*|workspaceFolder|workspaceFolderBasename|userHome|pathSeparator|/)\}`)

// checkClientVars reports the client variables in v, which mcpx does not
// expand: the server would get them as written. ${input:...} is an error,
// since its value exists only in the prompt a client would show; the others
// are warnings, as "${env:X}" may be meant literally.
func (p *problems) checkClientVars(name, field, v string) {
	const only = "mcpx expands only " + placeholder.Root + " and " + placeholder.Cwd
	for _, m := range clientVar.FindAllStringSubmatch(v, -1) {
		text, inner := m[0], m[1]
		switch {
		case strings.HasPrefix(inner, "input:"):
			p.add(name, field, fmt.Sprintf("%s is a VS Code input, which mcpx does not support: it never prompts", text),
				fmt.Sprintf("write the value itself in the config (%s)", only))
		case inner == "workspaceFolder":
			p.warn(name, field, fmt.Sprintf("%s is not expanded: the server gets it as written", text),
				fmt.Sprintf("use %s, the caller's worktree or repository", placeholder.Root))
		default:
			p.warn(name, field, fmt.Sprintf("%s is not expanded: the server gets it as written", text),
				fmt.Sprintf("write the value itself (%s)", only))
		}
	}
}

// usesInputs reports whether s refers to a VS Code input.
func (s *Server) usesInputs() bool {
	for _, v := range s.substituted() {
		if strings.Contains(v, "${input:") {
			return true
		}
	}
	return false
}

type problem struct{ msg, hint string }

// placeholderProblems finds the ${mcpx...} placeholders in s that are not
// known, nor an allocation in allocs. A "${mcpx" followed by anything but
// "." or "}" (say ${mcpxHome}) is not ours and passes through, like any
// other ${...}.
func placeholderProblems(s string, allocs map[string]*Alloc) []problem {
	var out []problem
	for r := range placeholder.Refs(s) {
		alloc, isAlloc := r.Alloc()
		switch {
		case isAlloc && allocs[alloc] != nil:
		case isAlloc:
			hint := fmt.Sprintf(`declare it: "allocate": {%q: {"range": [9222, 9299]}}`, alloc)
			if names := slices.Sorted(maps.Keys(allocs)); len(names) > 0 {
				hint = "the server's allocate block declares " + strings.Join(names, ", ")
				if sug := suggest.Closest(alloc, names); sug != "" {
					hint = fmt.Sprintf("did you mean %salloc.%s}? (%s)", "${mcpx.", sug, hint)
				}
			}
			out = append(out, problem{fmt.Sprintf("%s names no allocation of this server", r.Text), hint})
		case !r.Closed:
			out = append(out, problem{fmt.Sprintf("unclosed placeholder %q", clip(r.Text, 40)), "close it with }: " + placeholder.Known})
		case r.Known():
		case r.Name == "":
			out = append(out, problem{fmt.Sprintf("empty placeholder %s", r.Text), placeholder.Known})
		default:
			hint := placeholder.Known
			if sug := suggest.Closest(r.Name, placeholder.Names); sug != "" {
				hint = fmt.Sprintf("did you mean ${mcpx.%s}? (%s)", sug, placeholder.Known)
			}
			out = append(out, problem{fmt.Sprintf("unknown placeholder %s", r.Text), hint})
		}
	}
	return out
}

// hasAbsPrefix reports whether a cwd is absolute once its placeholders are
// substituted: an absolute path, or one that starts with a placeholder (both
// stand for absolute paths).
func hasAbsPrefix(cwd string) bool {
	return filepath.IsAbs(cwd) || strings.HasPrefix(cwd, placeholder.Root) || strings.HasPrefix(cwd, placeholder.Cwd) ||
		strings.HasPrefix(cwd, placeholder.TmpDir)
}

func (p *problems) checkChoices(name string, s *Server) {
	switch {
	case s.Scope == "" && (s.URL != "" || s.OpenAPI != nil) && s.Command == "" && s.CLI == nil:
		s.Scope = ScopeGlobal
	case s.Scope == "" && s.CLI != nil:
		s.Scope = ScopeWorktree // as a command server's, in any file
	case s.Scope == "" && p.foreign && !s.usesDirPlaceholder():
		// A client spawns one process from its own directory and offers it
		// no roots mcpx would invent: a server that names its directories
		// in its arguments keeps them. "scope", ${mcpx.root} or ${mcpx.cwd}
		// opt in to mcpx's scopes.
		s.Scope = ScopeGlobal
		if s.Roots == nil {
			no := false
			s.Roots = &no
		}
	case s.Scope == "":
		s.Scope = ScopeWorktree
	case !slices.Contains(scopeKinds, s.Scope):
		names := make([]string, len(scopeKinds))
		for i, k := range scopeKinds {
			names[i] = string(k)
		}
		p.add(name, "scope", fmt.Sprintf("unknown scope %q", s.Scope), hintFor(string(s.Scope), names, "scopes"))
	}
	switch s.Protocol {
	case "", "auto", "handshake", "stateless":
	default:
		p.add(name, "protocol", fmt.Sprintf("unknown protocol %q", s.Protocol), hintFor(s.Protocol, []string{"auto", "handshake", "stateless"}, "protocols"))
	}
	switch s.Sharing {
	case "":
		s.Sharing = SharingShared
	case SharingShared, SharingExclusive:
	default:
		p.add(name, "sharing", fmt.Sprintf("unknown sharing %q", s.Sharing), hintFor(string(s.Sharing), []string{string(SharingShared), string(SharingExclusive)}, "values"))
	}
}

// checkScopePolicy checks scopePolicy.allow: known scopes, and the
// configured scope among them (a policy that refuses the server's own scope
// would refuse every call that does not override it). Run after
// checkChoices, which fills the default scope.
func (p *problems) checkScopePolicy(name string, s *Server) {
	sp := s.ScopePolicy
	if sp.Allow == nil {
		return
	}
	names := make([]string, len(scopeKinds))
	for i, k := range scopeKinds {
		names[i] = string(k)
	}
	for _, k := range sp.Allow {
		if !slices.Contains(scopeKinds, k) {
			p.add(name, "scopePolicy.allow", fmt.Sprintf("unknown scope %q", k), hintFor(string(k), names, "scopes"))
		}
	}
	if slices.Contains(scopeKinds, s.Scope) && !slices.Contains(sp.Allow, s.Scope) {
		p.add(name, "scopePolicy.allow", fmt.Sprintf("the server's own scope %q is not in the list", s.Scope),
			fmt.Sprintf("add %q to scopePolicy.allow, or change the server's scope", s.Scope))
	}
	if !sp.AllowOverride {
		p.warn(name, "scopePolicy.allow", "scopePolicy.allow has no effect while scopePolicy.allowOverride is false",
			`set "allowOverride": true to let callers choose among the listed scopes`)
	}
}

// checkPoolScopePolicy checks pool.scopePolicy: known scopes in allow.
func (p *problems) checkPoolScopePolicy(pc *Pool) {
	sp := pc.ScopePolicy
	if sp == nil {
		return
	}
	names := make([]string, len(scopeKinds))
	for i, k := range scopeKinds {
		names[i] = string(k)
	}
	for _, k := range sp.Allow {
		if !slices.Contains(scopeKinds, k) {
			p.add("", "pool.scopePolicy.allow", fmt.Sprintf("unknown scope %q", k), hintFor(string(k), names, "scopes"))
		}
	}
	if !sp.AllowOverride {
		p.warn("", "pool.scopePolicy.allowOverride", "pool.scopePolicy.allowOverride is false: no server's scope may be overridden, whatever its own scopePolicy says",
			`set "allowOverride" to true or to the caller kinds to take overrides from, such as ["flag"]`)
	}
}

// isToken reports whether s is an HTTP token (RFC 9110, section 5.6.2).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// checkReady checks a server's readiness signal: a stdio server's, with a
// regular expression that compiles.
func (p *problems) checkReady(name string, s *Server) {
	switch {
	case s.Ready == nil:
	case s.Ready.Stderr == "":
		p.add(name, "ready.stderr", "ready needs stderr", `a regular expression a line of the child's stderr matches once it is ready, such as "Updated allowed directories"; or remove "ready"`)
	case s.URL != "":
		p.add(name, "ready", "ready.stderr is for stdio servers; a url server has no stderr", `remove "ready"`)
	default:
		if _, err := regexp.Compile(s.Ready.Stderr); err != nil {
			p.add(name, "ready.stderr", fmt.Sprintf("not a regular expression: %v", err), "use Go regexp syntax (https://pkg.go.dev/regexp/syntax)")
		}
	}
}
