package broker

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Config is the daemon owner's configuration. The zero Config has no servers;
// DefaultConfig returns the one served when no config file exists.
type Config struct {
	// Servers by name. Names are [A-Za-z0-9_-]+ (they appear in URLs and in
	// "server.tool" CLI arguments).
	Servers map[string]*ServerConfig `json:"servers"`
	Pool    PoolConfig               `json:"pool"`
	// CeilingDirs stop git discovery from walking up into them, like
	// GIT_CEILING_DIRECTORIES: with a dotfiles repository at ~/.git, list
	// your home directory here, or every directory under it that is not
	// a repository of its own resolves to the home "worktree". Absolute.
	CeilingDirs []string `json:"ceilingDirs,omitempty"`
	// Source is the file the config was read from ("" for the built-in one).
	Source string `json:"-"`
}

// ServerConfig is one child MCP server. Exactly one of Command or URL is set.
// String fields keep ${mcpx.root}/${mcpx.cwd} placeholders; they are
// substituted at spawn time only.
type ServerConfig struct {
	Name string `json:"-"` // the key in Config.Servers

	// stdio child
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"` // "" = the instance root, else unset

	// streamable-HTTP child
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`

	Scope        ScopeKind `json:"scope,omitempty"`        // "" = worktree for command servers, global for url servers
	Sharing      Sharing   `json:"sharing,omitempty"`      // "" = shared
	Max          int       `json:"max,omitempty"`          // instances of this server; 0 = 4
	IdleTimeout  Duration  `json:"idleTimeout,omitempty"`  // 0 = pool.idleTimeout
	CallTimeout  Duration  `json:"callTimeout,omitempty"`  // 0 = 5m
	StartTimeout Duration  `json:"startTimeout,omitempty"` // 0 = 30s; spawn + initialize
	Tags         []string  `json:"tags,omitempty"`
	Description  string    `json:"description,omitempty"`
}

// Sharing says how concurrent callers with the same key use one instance.
type Sharing string

const (
	SharingShared    Sharing = "shared"    // many callers multiplexed on one child
	SharingExclusive Sharing = "exclusive" // one caller at a time; others wait until their deadline
)

// PoolConfig holds daemon-wide pool limits.
type PoolConfig struct {
	MaxInstances int      `json:"maxInstances,omitempty"` // 0 = 64
	IdleTimeout  Duration `json:"idleTimeout,omitempty"`  // 0 = 5m
	ReapInterval Duration `json:"reapInterval,omitempty"` // 0 = 30s
}

// Duration is a time.Duration that reads and writes Go duration strings
// ("90s", "5m"). Bare JSON numbers are rejected: they are ambiguous.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d as Go does ("1m30s").
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a Go duration string ("90s"). Numbers are rejected.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if string(b) == "null" {
		return nil
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"90s\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q: want a Go duration such as \"90s\" or \"5m\"", s)
	}
	*d = Duration(v)
	return nil
}

// Defaults that ParseConfig, Normalize and DefaultConfig fill in.
const (
	DefaultMax          = 4
	DefaultCallTimeout  = 5 * time.Minute
	DefaultStartTimeout = 30 * time.Second
	DefaultMaxInstances = 64
	DefaultIdleTimeout  = 5 * time.Minute
	DefaultReapInterval = 30 * time.Second
)

// The placeholders the pool substitutes at spawn time. Any other ${mcpx.NAME}
// is a config error; other ${...} are left alone.
const (
	PlaceholderRoot = "${mcpx.root}" // the instance root
	PlaceholderCwd  = "${mcpx.cwd}"  // the caller's cwd
)

// ParseConfig reads a config document. source names it in errors (a path).
// Both {"servers": {...}} and the {"mcpServers": {...}} shape used by Claude
// Desktop, Cursor and VS Code are accepted. Every error names the server and
// the field and suggests the fix.
//
// The returned Config is normalized (see Normalize). On failure the error is
// a *ConfigError holding every problem found, each a *Error of KindConfig.
func ParseConfig(data []byte, source string) (*Config, error) {
	var p problems
	cfg, order := p.decode(data)
	if cfg == nil {
		return nil, p.err(source)
	}
	cfg.Source = source
	p.checkPool(&cfg.Pool)
	rank := map[string]int{}
	for i, d := range order {
		p.checkServer(d.name, cfg.Servers[d.name], d.typ, &cfg.Pool, d.bad)
		rank[d.name] = i + 1
	}
	p.groupByServer(rank)
	if err := p.err(source); err != nil {
		return nil, err
	}
	return cfg, nil
}

// LoadConfig reads and parses the file at path.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &Error{Kind: KindConfig, Op: "load config", Err: err,
			Msg:  fmt.Sprintf("config file %s does not exist", path),
			Hint: "create it, or leave out --config to serve the built-in demo server"}
	}
	if err != nil {
		return nil, &Error{Kind: KindConfig, Op: "load config", Err: err,
			Msg: fmt.Sprintf("reading config file %s: %v", path, err)}
	}
	return ParseConfig(data, path)
}

// DefaultConfig is the config served when there is no config file: the
// built-in demo server, run as `<self> demo-server`, scoped to the worktree.
func DefaultConfig(self string) *Config {
	c := &Config{Servers: map[string]*ServerConfig{
		"demo": {
			Command:     self,
			Args:        []string{"demo-server"},
			Scope:       ScopeWorktree,
			Description: "The built-in demo server: echo, add, sleep, progress, roots and failure tools.",
			Tags:        []string{"demo"},
		},
	}}
	if err := c.Normalize(); err != nil {
		panic("broker: invalid default config: " + err.Error()) // a bug
	}
	return c
}

// Normalize checks c as ParseConfig does and fills in the defaults: scope
// (worktree for command servers, global for url servers), sharing, max, the
// timeouts and the pool limits. It is for configs built in code; ParseConfig
// has already normalized what it returns.
func (c *Config) Normalize() error {
	var p problems
	p.checkPool(&c.Pool)
	for _, name := range slices.Sorted(maps.Keys(c.Servers)) {
		if s := c.Servers[name]; s == nil {
			p.add(name, "", "no definition", "give it a command or a url")
		} else {
			p.checkServer(name, s, "", &c.Pool, nil)
		}
	}
	return p.err(c.Source)
}

// ConfigError is every problem found in one config document. Each of Errs is
// a *Error of KindConfig naming the server and field; errors.As finds them.
type ConfigError struct {
	Source string // the file, "" for a config built in code
	Errs   []error
}

func (e *ConfigError) Error() string {
	prefix := "config"
	if e.Source != "" {
		prefix += " " + e.Source
	}
	if len(e.Errs) == 1 {
		return prefix + ": " + e.Errs[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d problems:", prefix, len(e.Errs))
	for _, err := range e.Errs {
		b.WriteString("\n\t" + err.Error())
	}
	return b.String()
}

func (e *ConfigError) Unwrap() []error { return e.Errs }

// problems collects config errors, in the order they are found.
type problems struct{ errs []error }

func (p *problems) add(server, field, msg, hint string) {
	p.errs = append(p.errs, &Error{Kind: KindConfig, Op: "load config", Server: server, Field: field, Msg: msg, Hint: hint})
}

// groupByServer orders the problems by server, document-level ones first,
// keeping the order in which each server's problems were found.
func (p *problems) groupByServer(rank map[string]int) {
	slices.SortStableFunc(p.errs, func(a, b error) int {
		return rank[a.(*Error).Server] - rank[b.(*Error).Server]
	})
}

func (p *problems) err(source string) error {
	if len(p.errs) == 0 {
		return nil
	}
	return &ConfigError{Source: source, Errs: p.errs}
}

// decoded is what decoding learnt about one server beyond its ServerConfig.
type decoded struct {
	name string
	typ  string          // the mcpServers "type", if any
	bad  map[string]bool // fields that failed to decode: not checked further
}

var topFields = []string{"servers", "mcpServers", "pool", "ceilingDirs"}

// decode reads the document's structure and field types. It returns nil when
// the document is not a JSON object at all.
func (p *problems) decode(data []byte) (*Config, []decoded) {
	members, err := objectMembers(data)
	if err != nil {
		p.syntax(data, err)
		return nil, nil
	}
	cfg := &Config{Servers: map[string]*ServerConfig{}}
	var order []decoded
	seen := map[string]bool{}
	for _, m := range members {
		if seen[m.key] {
			p.add("", m.key, fmt.Sprintf("field %q appears twice", m.key), "merge the two")
			continue
		}
		seen[m.key] = true
		switch m.key {
		case "servers", "mcpServers":
			order = append(order, p.decodeServers(cfg, m.key, m.value)...)
		case "pool":
			p.decodePool(&cfg.Pool, m.value)
		case "ceilingDirs":
			p.decodeCeilings(&cfg.CeilingDirs, m.value)
		default:
			p.add("", m.key, fmt.Sprintf("unknown top-level field %q", m.key), hintFor(m.key, topFields, "fields"))
		}
	}
	if seen["servers"] && seen["mcpServers"] {
		p.add("", "mcpServers", `both "servers" and "mcpServers" are set`, "put every server under one of them")
	}
	return cfg, order
}

// syntax reports why data is not a JSON object, with the line and column.
func (p *problems) syntax(data []byte, err error) {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		// The streaming decoder's offsets are not always from the start of
		// data; Unmarshal checks the whole document first, so its are.
		var v any
		if uerr := json.Unmarshal(data, &v); errors.As(uerr, &se) {
			err = se
		}
		line, col := position(data, se.Offset-1) // the offending byte
		p.add("", "", fmt.Sprintf("invalid JSON at line %d, column %d: %v", line, col, err), "")
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		p.add("", "", "the document is empty or truncated", `a config is a JSON object such as {"servers": {"name": {"command": "..."}}}`)
	default:
		p.add("", "", err.Error(), `a config is a JSON object such as {"servers": {"name": {"command": "..."}}}`)
	}
}

func (p *problems) decodeServers(cfg *Config, key string, raw json.RawMessage) []decoded {
	if isNull(raw) {
		return nil
	}
	members, err := objectMembers(raw)
	if err != nil {
		p.add("", key, fmt.Sprintf("%s must be an object of servers by name", key), `such as {"git": {"command": "mcp-server-git"}}`)
		return nil
	}
	var order []decoded
	for _, m := range members {
		if _, dup := cfg.Servers[m.key]; dup {
			p.add(m.key, "", "defined twice", "rename or remove one of them")
			continue
		}
		s, d := p.decodeServer(m.key, m.value)
		cfg.Servers[m.key] = s
		order = append(order, d)
	}
	return order
}

// want describes a field's expected JSON type, for type errors.
type fieldSpec struct {
	ptr  any
	want string
}

func serverFields(s *ServerConfig, typ *string) map[string]fieldSpec {
	const (
		str     = "a string"
		strs    = "an array of strings"
		strMap  = "an object with string values"
		durWant = `a duration string such as "90s" or "5m"`
	)
	return map[string]fieldSpec{
		"command":      {&s.Command, str},
		"args":         {&s.Args, strs},
		"env":          {&s.Env, strMap},
		"cwd":          {&s.Cwd, str},
		"url":          {&s.URL, str},
		"headers":      {&s.Headers, strMap},
		"type":         {typ, `"stdio", "http" or "streamable-http"`},
		"scope":        {&s.Scope, str},
		"sharing":      {&s.Sharing, `"shared" or "exclusive"`},
		"max":          {&s.Max, "a non-negative integer"},
		"idleTimeout":  {&s.IdleTimeout, durWant},
		"callTimeout":  {&s.CallTimeout, durWant},
		"startTimeout": {&s.StartTimeout, durWant},
		"tags":         {&s.Tags, strs},
		"description":  {&s.Description, str},
	}
}

func (p *problems) decodeServer(name string, raw json.RawMessage) (*ServerConfig, decoded) {
	s := &ServerConfig{Name: name}
	d := decoded{name: name, bad: map[string]bool{}}
	members, err := objectMembers(raw)
	if err != nil {
		p.add(name, "", "a server must be an object", `such as {"command": "mcp-server-git", "args": ["--repository", "${mcpx.root}"]}`)
		d.bad["command"], d.bad["url"] = true, true
		return s, d
	}
	fields := serverFields(s, &d.typ)
	p.decodeFields(name, "", members, fields, d.bad)
	return s, d
}

func (p *problems) decodeCeilings(dirs *[]string, raw json.RawMessage) {
	if err := json.Unmarshal(raw, dirs); err != nil {
		p.add("", "ceilingDirs", "ceilingDirs must be a list of strings", `such as ["/home/me"]`)
		return
	}
	for i, d := range *dirs {
		if !filepath.IsAbs(d) {
			p.add("", fmt.Sprintf("ceilingDirs[%d]", i), fmt.Sprintf("%q is not an absolute path", d), "use an absolute path such as /home/me")
		}
	}
}

func (p *problems) decodePool(pc *PoolConfig, raw json.RawMessage) {
	if isNull(raw) {
		return
	}
	members, err := objectMembers(raw)
	if err != nil {
		p.add("", "pool", "pool must be an object", `such as {"maxInstances": 64, "idleTimeout": "5m"}`)
		return
	}
	fields := map[string]fieldSpec{
		"maxInstances": {&pc.MaxInstances, "a non-negative integer"},
		"idleTimeout":  {&pc.IdleTimeout, `a duration string such as "5m"`},
		"reapInterval": {&pc.ReapInterval, `a duration string such as "30s"`},
	}
	p.decodeFields("", "pool.", members, fields, map[string]bool{})
}

// decodeFields decodes each member into its field, one at a time, so that
// one bad field does not hide the problems of the others.
func (p *problems) decodeFields(server, prefix string, members []member, fields map[string]fieldSpec, bad map[string]bool) {
	names := slices.Sorted(maps.Keys(fields))
	seen := map[string]bool{}
	for _, m := range members {
		f, ok := fields[m.key]
		switch {
		case !ok:
			p.add(server, prefix+m.key, fmt.Sprintf("unknown field %q", m.key), hintFor(m.key, names, "fields"))
			if s := suggest(m.key, names); s != "" {
				bad[s] = true // a misspelt "comand" is not also a missing command
			}
			continue
		case seen[m.key]:
			p.add(server, prefix+m.key, fmt.Sprintf("field %q appears twice", m.key), "keep one of them")
			continue
		}
		seen[m.key] = true
		if err := json.Unmarshal(m.value, f.ptr); err != nil {
			bad[m.key] = true
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				p.add(server, prefix+m.key, fmt.Sprintf("want %s, got %s", f.want, te.Value), "")
			} else {
				p.add(server, prefix+m.key, err.Error(), "")
			}
		}
	}
}

var serverName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

var scopeKinds = []ScopeKind{ScopeGlobal, ScopeRepo, ScopeWorktree, ScopeCwd, ScopeSession, ScopeParentSession, ScopePid, ScopeCall}

// transportTypes are the mcpServers "type" values: what each requires.
var transportTypes = map[string]string{"stdio": "command", "http": "url", "streamable-http": "url"}

func (p *problems) checkPool(pc *PoolConfig) {
	if pc.MaxInstances < 0 {
		p.add("", "pool.maxInstances", fmt.Sprintf("maxInstances is %d", pc.MaxInstances), fmt.Sprintf("use 0 for the default (%d) or a positive number", DefaultMaxInstances))
	} else if pc.MaxInstances == 0 {
		pc.MaxInstances = DefaultMaxInstances
	}
	p.duration("", "pool.idleTimeout", &pc.IdleTimeout, DefaultIdleTimeout)
	p.duration("", "pool.reapInterval", &pc.ReapInterval, DefaultReapInterval)
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

// checkServer validates s and fills in its defaults. typ is the mcpServers
// "type" ("" if absent); fields in bad failed to decode and are skipped.
func (p *problems) checkServer(name string, s *ServerConfig, typ string, pc *PoolConfig, bad map[string]bool) {
	s.Name = name
	if !serverName.MatchString(name) {
		p.add(name, "", "invalid server name", "names may use only letters, digits, _ and - (they appear in URLs and in server.tool arguments)")
	}
	p.checkTransport(name, s, typ, bad)
	p.checkStrings(name, s)
	if s.Cwd != "" && !hasAbsPrefix(s.Cwd) && placeholderProblems(s.Cwd) == nil {
		p.add(name, "cwd", fmt.Sprintf("cwd %q is relative", s.Cwd),
			fmt.Sprintf("use an absolute path, or %s/%s for a directory under the instance root", PlaceholderRoot, strings.TrimPrefix(s.Cwd, "./")))
	}
	p.checkChoices(name, s)
	p.checkRootPlaceholder(name, s)
	if s.Max < 0 {
		p.add(name, "max", fmt.Sprintf("max is %d", s.Max), fmt.Sprintf("use 0 for the default (%d) or a positive number", DefaultMax))
	} else if s.Max == 0 {
		s.Max = DefaultMax
	}
	p.duration(name, "idleTimeout", &s.IdleTimeout, cmp.Or(pc.IdleTimeout.D(), DefaultIdleTimeout))
	p.duration(name, "callTimeout", &s.CallTimeout, DefaultCallTimeout)
	p.duration(name, "startTimeout", &s.StartTimeout, DefaultStartTimeout)
}

// checkTransport enforces exactly one of command and url, agreement with the
// mcpServers "type", and fields that belong to the other transport.
func (p *problems) checkTransport(name string, s *ServerConfig, typ string, bad map[string]bool) {
	hasCmd, hasURL := s.Command != "", s.URL != ""
	switch {
	case hasCmd && hasURL:
		p.add(name, "url", "both command and url are set", "a server is either a command (stdio) or a url (streamable HTTP): remove one")
	case !hasCmd && !hasURL && !bad["command"] && !bad["url"]:
		p.add(name, "command", "neither command nor url is set", `set "command" for a stdio server or "url" for a streamable-HTTP server`)
	}
	if typ != "" && !bad["type"] {
		need, ok := transportTypes[typ]
		switch {
		case typ == "sse":
			p.add(name, "type", `the legacy SSE transport is not supported`, `use the server's streamable-HTTP endpoint with type "http"`)
		case !ok:
			p.add(name, "type", fmt.Sprintf("unknown type %q", typ), hintFor(typ, slices.Sorted(maps.Keys(transportTypes)), "types"))
		case need == "command" && !hasCmd && hasURL:
			p.add(name, "type", fmt.Sprintf("type %q needs a command, but url is set", typ), `use type "http" for a url server`)
		case need == "url" && !hasURL && hasCmd:
			p.add(name, "type", fmt.Sprintf("type %q needs a url, but command is set", typ), `use type "stdio" for a command server`)
		}
	}
	if hasURL && !hasCmd {
		for field, set := range map[string]bool{"args": len(s.Args) > 0, "env": len(s.Env) > 0, "cwd": s.Cwd != ""} {
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
	}
}

func (p *problems) checkURL(name, raw string) {
	probe := strings.NewReplacer(PlaceholderRoot, "root", PlaceholderCwd, "cwd").Replace(raw)
	u, err := url.Parse(probe)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.add(name, "url", fmt.Sprintf("url %q is not an absolute http(s) URL", raw), "use a streamable-HTTP endpoint such as https://host/mcp")
	}
}

// checkStrings checks placeholders and characters in every string the pool
// will use, naming the field as args[1], env.NAME or headers.NAME.
func (p *problems) checkStrings(name string, s *ServerConfig) {
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
		p.checkString(name, field, v)
	}
}

// substituted yields every field the pool substitutes placeholders in, named
// as errors name them: command, args[1], env.NAME, cwd, url, headers.NAME.
func (s *ServerConfig) substituted() iter.Seq2[string, string] {
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
func (p *problems) checkRootPlaceholder(name string, s *ServerConfig) {
	if !slices.Contains(rootless, s.Scope) {
		return
	}
	for _, ph := range []string{PlaceholderRoot, PlaceholderCwd} {
		for field, v := range s.substituted() {
			if strings.Contains(v, ph) {
				what := "has no root"
				if ph == PlaceholderCwd {
					what = "is shared by callers in different directories"
				}
				p.add(name, field, fmt.Sprintf("%s is used, but an instance of scope %q %s", ph, s.Scope, what),
					`use scope "worktree", "repo" or "cwd", or remove the placeholder`)
				break
			}
		}
	}
}

func (p *problems) checkString(name, field, v string) {
	if strings.IndexByte(v, 0) >= 0 {
		p.add(name, field, "contains a NUL byte", "")
	}
	for _, pr := range placeholderProblems(v) {
		p.add(name, field, pr.msg, pr.hint)
	}
}

type problem struct{ msg, hint string }

const knownPlaceholders = "known: " + PlaceholderRoot + ", " + PlaceholderCwd

// placeholderProblems finds the ${mcpx...} placeholders in s that are not
// ${mcpx.root} or ${mcpx.cwd}. A "${mcpx" followed by anything but "." or
// "}" (say ${mcpxHome}) is not ours and passes through, like any other ${...}.
func placeholderProblems(s string) []problem {
	const open = "${mcpx"
	var out []problem
	for i := 0; ; {
		j := strings.Index(s[i:], open)
		if j < 0 {
			return out
		}
		start := i + j
		after := s[start+len(open):]
		if after != "" && after[0] != '.' && after[0] != '}' {
			i = start + len(open)
			continue
		}
		end := strings.IndexByte(after, '}')
		if end < 0 {
			out = append(out, problem{fmt.Sprintf("unclosed placeholder %q", clip(s[start:], 40)), "close it with }: " + knownPlaceholders})
			return out
		}
		tok := s[start : start+len(open)+end+1]
		switch name := strings.TrimPrefix(tok[len(open):len(tok)-1], "."); {
		case tok == PlaceholderRoot || tok == PlaceholderCwd:
		case name == "":
			out = append(out, problem{fmt.Sprintf("empty placeholder %s", tok), knownPlaceholders})
		default:
			hint := knownPlaceholders
			if sug := suggest(name, []string{"root", "cwd"}); sug != "" {
				hint = fmt.Sprintf("did you mean ${mcpx.%s}? (%s)", sug, knownPlaceholders)
			}
			out = append(out, problem{fmt.Sprintf("unknown placeholder %s", tok), hint})
		}
		i = start + len(tok)
	}
}

// hasAbsPrefix reports whether a cwd is absolute once its placeholders are
// substituted: an absolute path, or one that starts with a placeholder (both
// stand for absolute paths).
func hasAbsPrefix(cwd string) bool {
	return filepath.IsAbs(cwd) || strings.HasPrefix(cwd, PlaceholderRoot) || strings.HasPrefix(cwd, PlaceholderCwd)
}

func (p *problems) checkChoices(name string, s *ServerConfig) {
	switch {
	case s.Scope == "" && s.URL != "" && s.Command == "":
		s.Scope = ScopeGlobal
	case s.Scope == "":
		s.Scope = ScopeWorktree
	case !slices.Contains(scopeKinds, s.Scope):
		names := make([]string, len(scopeKinds))
		for i, k := range scopeKinds {
			names[i] = string(k)
		}
		p.add(name, "scope", fmt.Sprintf("unknown scope %q", s.Scope), hintFor(string(s.Scope), names, "scopes"))
	}
	switch s.Sharing {
	case "":
		s.Sharing = SharingShared
	case SharingShared, SharingExclusive:
	default:
		p.add(name, "sharing", fmt.Sprintf("unknown sharing %q", s.Sharing), hintFor(string(s.Sharing), []string{string(SharingShared), string(SharingExclusive)}, "values"))
	}
}

// hintFor suggests the closest known name to got, or lists them all.
func hintFor(got string, known []string, what string) string {
	if s := suggest(got, known); s != "" {
		return fmt.Sprintf("did you mean %q?", s)
	}
	return fmt.Sprintf("known %s: %s", what, strings.Join(known, ", "))
}

// suggest returns the candidate closest to s by edit distance, if it is
// close enough to be a likely typo.
func suggest(s string, candidates []string) string {
	if len(s) > 64 {
		return ""
	}
	best, bestDist := "", -1
	for _, c := range candidates {
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	if bestDist < 0 || bestDist > max(1, min(3, len(best)/3)) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
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

// member is one key and value of a JSON object, in document order.
type member struct {
	key   string
	value json.RawMessage
}

var errNotObject = errors.New("not a JSON object")

// objectMembers splits a JSON object into its members, keeping their order
// and any duplicate keys (which encoding/json would silently merge).
func objectMembers(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, errNotObject
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errNotObject
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{key, v})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = errors.New("unexpected data after the top-level object")
		}
		return nil, err
	}
	return out, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// position converts a byte offset in data to a 1-based line and column.
func position(data []byte, offset int64) (line, col int) {
	offset = min(max(offset, 0), int64(len(data)))
	before := data[:offset]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
