package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"mcpx.dev/mcpx/internal/suggest"
)

// decoded is what decoding learnt about one server beyond its Server.
type decoded struct {
	name     string
	typ      transport       // the client formats' "type" or "transportType", if any
	disabled bool            // "disabled": true: checked, but not served
	bad      map[string]bool // fields that failed to decode: not checked further
	// probs are this server's own problems, kept apart until it is known
	// whether the server is disabled (then its errors are only warnings).
	probs *problems
}

// transport is the transport a client format names for a server, and the
// field that names it ("type", or Cline's "transportType").
type transport struct{ field, value string }

var topFields = []string{"servers", "mcpServers", "pool", "limits", "nix", "records", "log", "ceilingDirs", "script", "mcp", "registry", "webhooks", "otel", "defaults", "public"}

// clientTop are the top-level keys of the client formats mcpx reads (see
// the package doc) besides their servers: VS Code's "inputs", checked where
// used, and Claude Desktop's own settings, which mean nothing to a broker.
var clientTop = map[string]bool{"inputs": true, "globalShortcut": true, "preferences": true}

// decode reads the document's structure and field types. It returns nil when
// the document is not a JSON object at all. inputs counts VS Code's input
// definitions.
func (p *problems) decode(data []byte) (cfg *Config, order []decoded, inputs int) {
	members, err := objectMembers(data)
	if err != nil {
		p.syntax(data, err)
		return nil, nil, 0
	}
	p.foreign = isForeign(members)
	cfg = &Config{Servers: map[string]*Server{}}
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
		case "limits":
			p.decodeLimits(&cfg.Limits, m.value)
		case "nix":
			p.decodeNix(&cfg.Nix, m.value)
		case "records":
			p.decodeRecords(&cfg.Records, m.value)
		case "log":
			p.decodeLog(&cfg.Log, m.value)
		case "ceilingDirs":
			p.decodeCeilings(&cfg.CeilingDirs, m.value)
		case "script":
			p.decodeScript(&cfg.Script, m.value)
		case "mcp":
			p.decodeMCP(&cfg.MCP, m.value)
		case "registry":
			p.decodeRegistry(&cfg.Registry, m.value)
		case "webhooks":
			p.decodeWebhooks(&cfg.Webhooks, m.value)
		case "otel":
			p.decodeOTel(&cfg.OTel, m.value)
		case "defaults":
			p.decodeDefaults(&cfg.Defaults, m.value)
		case "public":
			p.decodePublic(&cfg.Public, m.value)
		case "$schema":
			// The JSON Schema an editor checks the file against
			// (`mcpx config schema`, schema.go); mcpx reads nothing from it.
			var s string
			if json.Unmarshal(m.value, &s) != nil {
				p.add("", "$schema", "$schema is not a string", `name the schema file, such as "./config.schema.json" (written by mcpx config init)`)
			}
		case "inputs":
			var in []json.RawMessage
			if json.Unmarshal(m.value, &in) != nil {
				p.warn("", "inputs", "inputs is not an array, ignored", "VS Code's inputs are an array of prompt definitions")
			}
			inputs = len(in)
		default:
			if !clientTop[m.key] {
				client := slices.Sorted(maps.Keys(clientTop))
				typo := suggest.Closest(m.key, topFields) != "" || suggest.Closest(m.key, client) != ""
				p.unknown("", m.key, fmt.Sprintf("unknown top-level field %q", m.key), clientHint(m.key, topFields, client, "fields"), typo)
			}
		}
	}
	if seen["servers"] && seen["mcpServers"] {
		p.add("", "mcpServers", `both "servers" and "mcpServers" are set`, "put every server under one of them")
	}
	return cfg, order, inputs
}

// isForeign reports whether a document is in a client's format rather than
// mcpx's own: its servers are under "mcpServers", it has a top-level key of
// a client format ("inputs", "globalShortcut", "preferences"), or a server
// names its transport ("type" or "transportType"), which mcpx's own format
// leaves to command or url.
func isForeign(members []member) bool {
	for _, m := range members {
		if m.key == "mcpServers" || clientTop[m.key] {
			return true
		}
		if m.key != "servers" {
			continue
		}
		servers, _ := objectMembers(m.value)
		for _, s := range servers {
			fields, _ := objectMembers(s.value)
			for _, f := range fields {
				if f.key == "type" || f.key == "transportType" {
					return true
				}
			}
		}
	}
	return false
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

// fieldSpec is where one JSON field decodes to.
type fieldSpec struct {
	ptr  any    // a pointer to the field
	want string // the field's expected JSON type, for type errors: "a string"
}

func serverFields(s *Server, typ *string, ready *json.RawMessage) map[string]fieldSpec {
	const (
		str     = "a string"
		strs    = "an array of strings"
		strMap  = "an object with string values"
		durWant = `a duration string such as "90s" or "5m"`
	)
	return map[string]fieldSpec{
		"command":       {&s.Command, str},
		"args":          {&s.Args, strs},
		"env":           {&s.Env, strMap},
		"inheritEnv":    {&s.InheritEnv, "true, false or a list of variable names"},
		"environment":   {&s.Environment, `"host", "auto", "flake:<flakeref>[#attr]" or "shell:<file>"`},
		"cwd":           {&s.Cwd, str},
		"url":           {&s.URL, str},
		"headers":       {&s.Headers, strMap},
		"type":          {typ, `"stdio", "http" or "streamable-http"`},
		"scope":         {&s.Scope, str},
		"sharing":       {&s.Sharing, `"shared" or "exclusive"`},
		"max":           {&s.Max, "a non-negative integer"},
		"idleTimeout":   {&s.IdleTimeout, durWant},
		"callTimeout":   {&s.CallTimeout, durWant},
		"startTimeout":  {&s.StartTimeout, durWant},
		"tags":          {&s.Tags, strs},
		"description":   {&s.Description, str},
		"scopePolicy":   {&s.ScopePolicy, `an object such as {"allow": ["session", "call"], "allowOverride": true}`},
		"toolTags":      {&s.ToolTags, "an object of tool names to arrays of strings"},
		"prelude":       {&s.Prelude, str},
		"allocate":      {&s.Allocate, `an object of names to allocations such as {"port": {"range": [9222, 9299]}}`},
		"sampling":      {&s.Sampling, "true or false"},
		"protocol":      {&s.Protocol, `"auto", "handshake" or "stateless"`},
		"ready":         {ready, `an object such as {"stderr": "Updated allowed directories"}`},
		"roots":         {&s.Roots, "true or false"},
		"callerRoots":   {&s.CallerRoots, "true or false"},
		"pinTools":      {&s.PinTools, "true or false"},
		"rate":          {&s.Rate, rateWant},
		"burst":         {&s.Burst, "a non-negative integer"},
		"maxConcurrent": {&s.MaxConcurrent, "a non-negative integer"},
		"cli":           {new(json.RawMessage), "an object"}, // decoded key by key: decodeCLI
		"health":        {&s.Health, `an object such as {"interval": "30s", "timeout": "5s"}`},
		"min":           {&s.Min, "a non-negative integer"},
		"warm":          {&s.Warm, "true or false"},
	}
}

func (p *problems) decodeServer(name string, raw json.RawMessage) (*Server, decoded) {
	s := &Server{Name: name}
	d := decoded{name: name, bad: map[string]bool{}, probs: &problems{foreign: p.foreign}}
	members, err := objectMembers(raw)
	if err != nil {
		d.probs.add(name, "", "a server must be an object", `such as {"command": "mcp-server-git", "args": ["--repository", "${mcpx.root}"]}`)
		d.bad["command"], d.bad["url"] = true, true
		return s, d
	}
	var typ string
	var ready json.RawMessage
	fields := serverFields(s, &typ, &ready)
	var openapi, sandbox, oauth json.RawMessage
	fields["openapi"] = fieldSpec{&openapi, `an object such as {"spec": "https://petstore3.swagger.io/api/v3/openapi.json"}`}
	fields["oauth"] = fieldSpec{&oauth, oauthWant}
	fields["sandbox"] = fieldSpec{&sandbox, sandboxWant[5:]}
	var own []member
	seen := map[string]bool{}
	for _, m := range members {
		_, mine := fields[m.key]
		switch {
		case !mine && seen[m.key]:
			d.probs.add(name, m.key, fmt.Sprintf("field %q appears twice", m.key), "keep one of them")
		case d.probs.clientField(name, m, &d), d.probs.renamedField(name, m):
			seen[m.key] = true
		case !mine && suggest.Closest(m.key, clientFields) != "" && suggest.Closest(m.key, slices.Collect(maps.Keys(fields))) == "":
			// A misspelt client key, say "autoAprove".
			d.probs.unknown(name, m.key, fmt.Sprintf("unknown field %q", m.key), fmt.Sprintf("did you mean %q?", suggest.Closest(m.key, clientFields)), true)
		default:
			own = append(own, m)
		}
	}
	d.probs.decodeFields(name, "", own, fields, d.bad)
	if ready != nil && !d.bad["ready"] {
		s.Ready = d.probs.decodeReady(name, ready)
	}
	if openapi != nil && !d.bad["openapi"] {
		s.OpenAPI = d.probs.decodeOpenAPI(name, openapi)
	}
	if sandbox != nil {
		s.Sandbox = d.probs.decodeSandbox(name, "sandbox", sandbox)
	}
	if oauth != nil && !d.bad["oauth"] {
		s.OAuth = d.probs.decodeOAuth(name, oauth)
	}
	if i := slices.IndexFunc(own, func(m member) bool { return m.key == "cli" }); i >= 0 && !isNull(own[i].value) {
		s.CLI = d.probs.decodeCLI(name, own[i].value)
	}
	if typ != "" { // "type" wins over Cline's legacy "transportType", as in Cline
		d.typ = transport{"type", typ}
	}
	return s, d
}

// clientFields are the per-server keys clientField knows.
var clientFields = []string{"alwaysAllow", "autoApprove", "dev", "disabled", "envFile", "timeout", "transportType"}

// clientField decodes m if it is a per-server key of a client format mcpx
// reads (see the package doc), and reports whether it was one. Cline's
// "disabled" is honoured and its "transportType" checked like "type";
// "envFile" would change what runs, so it is refused; the rest (approval
// lists, Cline's timeout, VS Code's dev mode) mean nothing to a broker and
// are ignored.
func (p *problems) clientField(name string, m member, d *decoded) bool {
	switch m.key {
	case "disabled":
		if err := json.Unmarshal(m.value, &d.disabled); err != nil {
			d.bad["disabled"] = true
			p.add(name, "disabled", "want true or false, got "+clip(string(m.value), 20), "")
		}
	case "transportType":
		var v string
		if err := json.Unmarshal(m.value, &v); err != nil {
			d.bad["type"] = true
			p.add(name, "transportType", "want a string, got "+clip(string(m.value), 20), `use "stdio" or "streamableHttp"`)
		} else {
			d.typ = transport{"transportType", v}
		}
	case "envFile":
		p.add(name, "envFile", "envFile is not supported: mcpx does not read environment files",
			`copy the variables the server needs into "env"`)
	case "autoApprove", "alwaysAllow", "timeout", "dev":
	default:
		return false
	}
	return true
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

func (p *problems) decodePool(pc *Pool, raw json.RawMessage) {
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
		"idleTimeout":  {&pc.IdleTimeout, `a duration string such as "5m", or one per scope such as {"call": "30s", "session": "30m", "default": "10m"}`},
		"health":       {&pc.Health, `an object such as {"interval": "30s", "timeout": "5s"}`},
		"scopePolicy":  {&pc.ScopePolicy, `an object such as {"allow": ["session", "call"], "allowOverride": ["flag"]}`},
		"reapInterval": {&pc.ReapInterval, `a duration string such as "30s"`},
		"waitTimeout":  {&pc.WaitTimeout, `a duration string such as "10s"`},
		"execWatch":    {&pc.ExecWatch, `a duration string such as "10s", or "off"`},
		"survive":      {&pc.Survive, "true or false"},
	}
	p.decodeFields("", "pool.", members, fields, map[string]bool{})
}

func (p *problems) decodeLimits(lc *Limits, raw json.RawMessage) {
	if isNull(raw) {
		return
	}
	members, err := objectMembers(raw)
	if err != nil {
		p.add("", "limits", "limits must be an object", `such as {"maxDepth": 64, "maxMessageBytes": 67108864}`)
		return
	}
	fields := map[string]fieldSpec{
		"maxDepth":        {&lc.MaxDepth, "a non-negative integer"},
		"maxMessageBytes": {&lc.MaxMessageBytes, "a non-negative integer (bytes)"},
		"rootsWait":       {&lc.RootsWait, `a duration string such as "1s"`},
		"execHashMax":     {&lc.ExecHashMax, "a non-negative integer (bytes)"},
		"inputWait":       {&lc.InputWait, `a duration string such as "2m"`},
		"ownerRate":       {&lc.OwnerRate, rateWant},
		"ownerBurst":      {&lc.OwnerBurst, "a non-negative integer"},
	}
	p.decodeFields("", "limits.", members, fields, map[string]bool{})
}

func (p *problems) decodeNix(nc *Nix, raw json.RawMessage) {
	if isNull(raw) {
		return
	}
	members, err := objectMembers(raw)
	if err != nil {
		p.add("", "nix", "nix must be an object", `such as {"offline": true, "timeout": "5m"}`)
		return
	}
	fields := map[string]fieldSpec{
		"binary":  {&nc.Binary, "a string (a command name or path)"},
		"offline": {&nc.Offline, "true or false"},
		"timeout": {&nc.Timeout, `a duration string such as "2m"`},
		"config":  {&nc.Config, "an array of nix.conf lines"},
		"refresh": {&nc.Refresh, `"never", "on-reload" or an interval such as "1h"`},
	}
	p.decodeFields("", "nix.", members, fields, map[string]bool{})
}

func (p *problems) decodeRecords(rc *Records, raw json.RawMessage) {
	if isNull(raw) {
		return
	}
	members, err := objectMembers(raw)
	if err != nil {
		p.add("", "records", "records must be an object", `such as {"enabled": true, "maxAge": "168h"}`)
		return
	}
	fields := map[string]fieldSpec{
		"enabled":  {&rc.Enabled, "true or false"},
		"bodies":   {&rc.Bodies, "true or false"},
		"maxBytes": {&rc.MaxBytes, "a non-negative integer (bytes)"},
		"maxAge":   {&rc.MaxAge, `a duration string such as "168h"`},
		"maxFiles": {&rc.MaxFiles, "a non-negative integer"},
	}
	p.decodeFields("", "records.", members, fields, map[string]bool{})
}

// logSessionPrefixes begin the scope keys of sessions (docs/scopes.md), the
// keys log.sessions names.
var logSessionPrefixes = []string{"session:", "psession:", "lease:", "pid:"}

func (p *problems) decodeLog(lc *Log, raw json.RawMessage) {
	if isNull(raw) {
		return
	}
	members, err := objectMembers(raw)
	if err != nil {
		p.add("", "log", "log must be an object", `such as {"level": "info", "servers": {"github": "debug"}}`)
		return
	}
	fields := map[string]fieldSpec{
		"level":    {&lc.Level, `"debug", "info", "warn" or "error"`},
		"servers":  {&lc.Servers, `an object of server names to levels, such as {"github": "debug"}`},
		"sessions": {&lc.Sessions, `an object of session keys to levels, such as {"session:agent-7": "debug"}`},
		"maxBytes": {&lc.MaxBytes, "a non-negative integer (bytes)"},
		"maxFiles": {&lc.MaxFiles, "a non-negative integer"},
	}
	p.decodeFields("", "log.", members, fields, map[string]bool{})
	level := func(field, v string) {
		if v != "" && !slices.Contains(LogLevels, v) {
			p.add("", field, fmt.Sprintf("unknown level %q", v), hintFor(v, LogLevels, "levels"))
		}
	}
	level("log.level", lc.Level)
	for _, name := range slices.Sorted(maps.Keys(lc.Servers)) {
		level("log.servers."+name, lc.Servers[name])
	}
	for _, key := range slices.Sorted(maps.Keys(lc.Sessions)) {
		level("log.sessions."+key, lc.Sessions[key])
		if !slices.ContainsFunc(logSessionPrefixes, func(p string) bool { return strings.HasPrefix(key, p) && len(key) > len(p) }) {
			p.add("", "log.sessions."+key, fmt.Sprintf("%q is no session key", key),
				fmt.Sprintf("name a session by its key, as `mcpx sessions ls` prints it: %s followed by the id (\"session:%s\")",
					strings.Join(logSessionPrefixes, " "), key))
		}
	}
	if lc.MaxBytes < 0 {
		p.add("", "log.maxBytes", "log.maxBytes is negative", "leave it out for 10 MiB")
	}
	if lc.MaxFiles < 0 {
		p.add("", "log.maxFiles", "log.maxFiles is negative", "leave it out for 5")
	}
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
			s := suggest.Closest(m.key, names)
			p.unknown(server, prefix+m.key, fmt.Sprintf("unknown field %q", m.key), hintFor(m.key, names, "fields"), s != "")
			if s != "" {
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

// decodeReady decodes a server's "ready" object; its fields are checked
// like the server's own, misspellings with a did-you-mean.
func (p *problems) decodeReady(server string, raw json.RawMessage) *Ready {
	members, err := objectMembers(raw)
	if err != nil {
		p.add(server, "ready", "want an object, got "+clip(string(raw), 20), `such as {"stderr": "Updated allowed directories"}`)
		return nil
	}
	r := new(Ready)
	p.decodeFields(server, "ready.", members, map[string]fieldSpec{"stderr": {&r.Stderr, "a string (a regular expression)"}}, map[string]bool{})
	return r
}
