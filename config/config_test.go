package config_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/nixresolve"
	"mcpx.dev/mcpx/observe/calllog"
	"mcpx.dev/mcpx/pool"
)

// configErrors returns the *config.Problems inside err, failing if err is
// not a *config.Error made only of them.
func configErrors(t testing.TB, err error) []*config.Problem {
	t.Helper()
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *config.Error", err, err)
	}
	var out []*config.Problem
	for _, e := range ce.Errs {
		var pe *config.Problem
		if !errors.As(e, &pe) {
			t.Fatalf("problem %v (%T) is not a *config.Problem", e, e)
		}
		out = append(out, pe)
	}
	return out
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		doc    string
		server string // "" = not about a server
		field  string
		want   []string // substrings of the message
	}{
		{"unknown field", `{"servers":{"git":{"comand":"git-mcp"}}}`,
			"git", "comand", []string{`unknown field "comand"`, `did you mean "command"?`}},
		{"unknown field no suggestion", `{"servers":{"git":{"command":"x","zzzzzz":1}}}`,
			"git", "zzzzzz", []string{`unknown field "zzzzzz"`, "known fields:", "startTimeout"}},
		{"duplicate field", `{"servers":{"git":{"command":"x","command":"y"}}}`,
			"git", "command", []string{"appears twice"}},
		{"unknown top-level field", `{"server":{}}`,
			"", "server", []string{`unknown top-level field "server"`, `did you mean "servers"?`}},
		{"bad nix spec", `{"servers":{"gopls":{"command":"nix:githb:o/r#gopls"}}}`,
			"gopls", "command", []string{`unknown flake reference type "githb:"`, "nix:<flakeref>#<attr>"}},
		{"nix spec with a placeholder", `{"servers":{"x":{"command":"nix:path:${mcpx.root}#tool","scope":"worktree"}}}`,
			"x", "command", []string{"may not hold ${mcpx.*} placeholders", "never run"}},
		{"negative nix timeout", `{"nix":{"timeout":"-1s"}}`,
			"", "nix.timeout", []string{"negative duration"}},
		{"unknown nix field", `{"nix":{"ofline":true}}`,
			"", "nix.ofline", []string{`did you mean "offline"?`}},
		{"nix config line with a newline", `{"nix":{"config":["a = 1\nb = 2"]}}`,
			"", "nix.config[0]", []string{"one setting per array element"}},
		{"prelude too long", `{"servers":{"x":{"command":"a","prelude":"` + strings.Repeat("y", config.MaxPreludeBytes+1) + `"}}}`,
			"x", "prelude", []string{"4097 bytes, over the limit of 4096", "how to obtain an id"}},
		{"prelude with a control character", `{"servers":{"x":{"command":"a","prelude":"ids come from \u001b[31mlist"}}}`,
			"x", "prelude", []string{"control character", "at byte 14", "newlines and tabs are allowed"}},
		{"prelude not a string", `{"servers":{"x":{"command":"a","prelude":["a"]}}}`,
			"x", "prelude", []string{"want a string, got array"}},
		{"tag with a space", `{"servers":{"x":{"command":"a","tags":["ok","two words"]}}}`,
			"x", "tags[1]", []string{`tag "two words" is empty or holds a space`}},
		{"tool tag empty", `{"servers":{"x":{"command":"a","toolTags":{"read_file":["files",""]}}}}`,
			"x", "toolTags.read_file[1]", []string{`tag "" is empty`}},
		{"tool tags not arrays", `{"servers":{"x":{"command":"a","toolTags":{"read_file":"files"}}}}`,
			"x", "toolTags", []string{"want an object of tool names to arrays of strings"}},
		{"unknown nix refresh policy", `{"nix":{"refresh":"daily"}}`,
			"", "nix.refresh", []string{`unknown refresh policy "daily"`, `"on-reload"`}},
		{"nix refresh interval too short", `{"nix":{"refresh":"10ms"}}`,
			"", "nix.refresh", []string{`unknown refresh policy "10ms"`, "at least 1s"}},
		{"unknown environment", `{"servers":{"x":{"command":"a","environment":"docker:ubuntu"}}}`,
			"x", "environment", []string{`unknown environment "docker:ubuntu"`, `"shell:<file>"`}},
		{"bad environment flake ref", `{"servers":{"x":{"command":"a","environment":"flake:githb:o/r"}}}`,
			"x", "environment", []string{`unknown flake reference type "githb:"`}},
		{"environment with a placeholder", `{"servers":{"x":{"command":"a","environment":"shell:${mcpx.root}/shell.nix"}}}`,
			"x", "environment", []string{"may not hold ${mcpx.*} placeholders", "never run"}},
		{"environment of a url server", `{"servers":{"x":{"url":"http://h/mcp","environment":"flake:path:/src"}}}`,
			"x", "environment", []string{"a url server has no execution environment"}},
		{"isolated with a command it does not hold", `{"servers":{"x":{"command":"node","environment":"isolated"}}}`,
			"x", "dependencies", []string{`holds no package, so command "node" is not in it`, `"nix:nixpkgs#node"`}},
		{"dependencies without isolated", `{"servers":{"x":{"command":"a","dependencies":["nix:nixpkgs#jq"]}}}`,
			"x", "dependencies", []string{"this server's environment is not one", `"environment": "isolated"`}},
		{"dependency not a nix spec", `{"servers":{"x":{"command":"jq","environment":"isolated","dependencies":["nix:nixpkgs#jq","jq"]}}}`,
			"x", "dependencies[1]", []string{`"jq" is not a nix program spec`, "nix:<flakeref>#<attr>"}},
		{"dependency with a placeholder", `{"servers":{"x":{"command":"jq","environment":"isolated","dependencies":["nix:path:${mcpx.root}#jq"]}}}`,
			"x", "dependencies[0]", []string{"may not hold ${mcpx.*} placeholders"}},
		{"isolated packages written in the environment", `{"servers":{"x":{"command":"jq","environment":"isolated:nix:nixpkgs#jq"}}}`,
			"x", "environment", []string{"an isolated environment's packages are its dependencies", `list the nix: packages in "dependencies"`}},
		{"isolated with env.PATH", `{"servers":{"x":{"command":"nix:nixpkgs#jq","environment":"isolated","env":{"PATH":"/usr/bin"}}}}`,
			"x", "env.PATH", []string{"its packages' bin directories"}},
		{"isolated adapter", `{"servers":{"x":{"cli":{"tools":{"t":{"args":["true"]}}},"environment":"isolated"}}}`,
			"x", "environment", []string{"for a command server"}},
		{"unknown pool field", `{"pool":{"maxInstance":3}}`,
			"", "pool.maxInstance", []string{`did you mean "maxInstances"?`}},
		{"command and url", `{"servers":{"x":{"command":"a","url":"http://h/mcp"}}}`,
			"x", "url", []string{"both command and url"}},
		{"neither command nor url", `{"servers":{"x":{"args":["a"]}}}`,
			"x", "command", []string{"neither command nor url"}},
		{"server not an object", `{"servers":{"x":"git"}}`,
			"x", "", []string{"must be an object"}},
		{"servers not an object", `{"servers":[]}`,
			"", "servers", []string{"must be an object"}},
		{"bad name", `{"servers":{"my server":{"command":"a"}}}`,
			"my server", "", []string{"invalid server name", "letters, digits"}},
		{"empty name", `{"servers":{"":{"command":"a"}}}`,
			"", "", []string{"invalid server name"}},
		{"duplicate server", `{"servers":{"a":{"command":"x"},"a":{"command":"y"}}}`,
			"a", "", []string{"defined twice"}},
		{"bad scope", `{"servers":{"x":{"command":"a","scope":"worktre"}}}`,
			"x", "scope", []string{`unknown scope "worktre"`, `did you mean "worktree"?`}},
		{"bad scope list", `{"servers":{"x":{"command":"a","scope":"galaxy"}}}`,
			"x", "scope", []string{`unknown scope "galaxy"`, "known scopes: global, repo, worktree, cwd, session, parent-session, pid, call"}},
		{"bad policy scope", `{"servers":{"x":{"command":"a","scope":"session","scopePolicy":{"allow":["session","sesion"],"allowOverride":true}}}}`,
			"x", "scopePolicy.allow", []string{`unknown scope "sesion"`, `did you mean "session"?`}},
		{"policy without own scope", `{"servers":{"x":{"command":"a","scope":"call","scopePolicy":{"allow":["session"],"allowOverride":true}}}}`,
			"x", "scopePolicy.allow", []string{`the server's own scope "call" is not in the list`, `add "call" to scopePolicy.allow`}},
		{"policy unknown field", `{"servers":{"x":{"command":"a","scopePolicy":{"allowOverrides":true}}}}`,
			"x", "scopePolicy", []string{`unknown field "allowOverrides"`}},
		{"policy wrong type", `{"servers":{"x":{"command":"a","scopePolicy":{"allowOverride":"yes"}}}}`,
			"x", "scopePolicy", []string{`got "yes" for allowOverride`}},
		{"policy unknown kind", `{"servers":{"x":{"command":"a","scopePolicy":{"allowOverride":["flags"]}}}}`,
			"x", "scopePolicy", []string{`unknown caller kind "flags"`, `did you mean "flag"?`}},
		{"pool policy unknown scope", `{"pool":{"scopePolicy":{"allow":["sesion"]}}}`,
			"", "pool.scopePolicy.allow", []string{`unknown scope "sesion"`}},
		{"bad sharing", `{"servers":{"x":{"command":"a","sharing":"exclusiv"}}}`,
			"x", "sharing", []string{`unknown sharing "exclusiv"`, `did you mean "exclusive"?`}},
		{"negative max", `{"servers":{"x":{"command":"a","max":-1}}}`,
			"x", "max", []string{"max is -1"}},
		{"fractional max", `{"servers":{"x":{"command":"a","max":1.5}}}`,
			"x", "max", []string{"want a non-negative integer"}},
		{"duration without unit", `{"servers":{"x":{"command":"a","callTimeout":"90"}}}`,
			"x", "callTimeout", []string{`invalid duration "90"`, `"90s"`}},
		{"duration as number", `{"servers":{"x":{"command":"a","idleTimeout":90}}}`,
			"x", "idleTimeout", []string{"duration string", "got 90"}},
		{"negative duration", `{"servers":{"x":{"command":"a","startTimeout":"-1s"}}}`,
			"x", "startTimeout", []string{"negative duration -1s"}},
		{"negative pool duration", `{"pool":{"reapInterval":"-5m"}}`,
			"", "pool.reapInterval", []string{"negative duration"}},
		{"bad pool duration", `{"pool":{"idleTimeout":"soon"}}`,
			"", "pool.idleTimeout", []string{`invalid duration "soon"`}},
		{"negative exec watch", `{"pool":{"execWatch":"-10s"}}`,
			"", "pool.execWatch", []string{"negative period", `"off"`}},
		{"bad exec watch", `{"pool":{"execWatch":"never"}}`,
			"", "pool.execWatch", []string{`invalid period "never"`, `"off"`}},
		{"negative exec hash max", `{"limits":{"execHashMax":-1}}`,
			"", "limits.execHashMax", []string{"execHashMax is -1", "positive number of bytes"}},
		{"negative pool max", `{"pool":{"maxInstances":-2}}`,
			"", "pool.maxInstances", []string{"maxInstances is -2"}},
		{"negative max depth", `{"limits":{"maxDepth":-1}}`,
			"", "limits.maxDepth", []string{"maxDepth is -1", "default (64)"}},
		{"unknown limits field", `{"limits":{"maxDeph":3}}`,
			"", "limits.maxDeph", []string{`did you mean "maxDepth"?`}},
		{"root placeholder in a rootless scope", `{"servers":{"fs":{"command":"a","args":["${mcpx.root}"],"scope":"session"}}}`,
			"fs", "args[0]", []string{`${mcpx.root} is used, but an instance of scope "session" has no root`, `use scope "worktree"`}},
		{"cwd placeholder in a shared scope", `{"servers":{"fs":{"command":"a","env":{"D":"${mcpx.cwd}"},"scope":"global"}}}`,
			"fs", "env.D", []string{`${mcpx.cwd} is used, but an instance of scope "global" is shared by callers in different directories`}},
		{"unknown placeholder", `{"servers":{"fs":{"command":"a","args":["--root","${mcpx.rot}"]}}}`,
			"fs", "args[1]", []string{"unknown placeholder ${mcpx.rot}", "did you mean ${mcpx.root}?", "known: ${mcpx.root}, ${mcpx.cwd}"}},
		{"unknown placeholder in command", `{"servers":{"fs":{"command":"${mcpx.bin}/x"}}}`,
			"fs", "command", []string{"unknown placeholder ${mcpx.bin}"}},
		{"unclosed placeholder", `{"servers":{"fs":{"command":"a","cwd":"${mcpx.root"}}}`,
			"fs", "cwd", []string{`unclosed placeholder "${mcpx.root"`}},
		{"unclosed bare placeholder", `{"servers":{"fs":{"command":"a","args":["x${mcpx"]}}}`,
			"fs", "args[0]", []string{"unclosed placeholder"}},
		{"empty placeholder", `{"servers":{"fs":{"command":"a","env":{"ROOT":"${mcpx.}"}}}}`,
			"fs", "env.ROOT", []string{"empty placeholder ${mcpx.}"}},
		{"placeholder without name", `{"servers":{"h":{"url":"http://h/mcp","headers":{"X-Root":"${mcpx}"}}}}`,
			"h", "headers.X-Root", []string{"empty placeholder ${mcpx}"}},
		{"placeholder in url", `{"servers":{"h":{"url":"http://h/${mcpx.roo}"}}}`,
			"h", "url", []string{"unknown placeholder ${mcpx.roo}"}},
		{"relative cwd", `{"servers":{"x":{"command":"a","cwd":"./sub/dir"}}}`,
			"x", "cwd", []string{`cwd "./sub/dir" is relative`, "absolute path", "${mcpx.root}/sub/dir"}},
		{"home cwd", `{"servers":{"x":{"command":"a","cwd":"~/src"}}}`,
			"x", "cwd", []string{"is relative"}},
		{"type stdio with url", `{"mcpServers":{"x":{"type":"stdio","url":"http://h/mcp"}}}`,
			"x", "type", []string{`type "stdio" needs a command`}},
		{"type http with command", `{"mcpServers":{"x":{"type":"http","command":"a"}}}`,
			"x", "type", []string{`type "http" needs a url`}},
		{"type sse", `{"mcpServers":{"x":{"type":"sse","url":"http://h/sse"}}}`,
			"x", "type", []string{"SSE transport is not supported"}},
		{"unknown type", `{"mcpServers":{"x":{"type":"stdi","command":"a"}}}`,
			"x", "type", []string{`unknown type "stdi"`, `did you mean "stdio"?`}},
		{"args for url server", `{"servers":{"x":{"url":"http://h/mcp","args":["a"]}}}`,
			"x", "args", []string{"only for command servers"}},
		{"cwd for url server", `{"servers":{"x":{"url":"http://h/mcp","cwd":"/tmp"}}}`,
			"x", "cwd", []string{"only for command servers"}},
		{"headers for command server", `{"servers":{"x":{"command":"a","headers":{"A":"b"}}}}`,
			"x", "headers", []string{"only for url servers"}},
		{"url not http", `{"servers":{"x":{"url":"ftp://h/mcp"}}}`,
			"x", "url", []string{"not an absolute http(s) URL"}},
		{"url relative", `{"servers":{"x":{"url":"/mcp"}}}`,
			"x", "url", []string{"not an absolute http(s) URL"}},
		{"args not an array", `{"servers":{"x":{"command":"a","args":"--flag"}}}`,
			"x", "args", []string{"want an array of strings, got string"}},
		{"env value not a string", `{"servers":{"x":{"command":"a","env":{"N":1}}}}`,
			"x", "env", []string{"want an object with string values, got number"}},
		{"bad env name", `{"servers":{"x":{"command":"a","env":{"A=B":"c"}}}}`,
			"x", "env", []string{`invalid environment variable name "A=B"`}},
		{"bad header name", `{"servers":{"x":{"url":"http://h/mcp","headers":{"a b":"c"}}}}`,
			"x", "headers", []string{`invalid header name "a b"`}},
		{"NUL in args", `{"servers":{"x":{"command":"a","args":["a\u0000b"]}}}`,
			"x", "args[0]", []string{"NUL"}},
		{"both shapes", `{"servers":{},"mcpServers":{}}`,
			"", "mcpServers", []string{`both "servers" and "mcpServers"`}},
		{"ready misspelt", `{"servers":{"fs":{"command":"x","redy":{"stderr":"y"}}}}`,
			"fs", "redy", []string{`unknown field "redy"`, `did you mean "ready"?`}},
		{"ready field misspelt", `{"servers":{"fs":{"command":"x","ready":{"stdrr":"y"}}}}`,
			"fs", "ready.stdrr", []string{`unknown field "stdrr"`, `did you mean "stderr"?`}},
		{"ready not an object", `{"servers":{"fs":{"command":"x","ready":"Updated"}}}`,
			"fs", "ready", []string{"want an object", `{"stderr":`}},
		{"ready without stderr", `{"servers":{"fs":{"command":"x","ready":{}}}}`,
			"fs", "ready.stderr", []string{"ready needs stderr"}},
		{"ready stderr not a regexp", `{"servers":{"fs":{"command":"x","ready":{"stderr":"Updated ("}}}}`,
			"fs", "ready.stderr", []string{"not a regular expression", "missing closing )"}},
		{"ready on a url server", `{"servers":{"web":{"url":"http://127.0.0.1:1/mcp","ready":{"stderr":"x"}}}}`,
			"web", "ready", []string{"stdio servers"}},
		{"syntax error", "{\n  \"servers\": {\n    \"x\": {\"command\": \"a\",}\n  }\n}",
			"", "", []string{"invalid JSON at line 3, column 26"}},
		{"not an object", `["servers"]`, "", "", []string{"JSON object"}},
		{"empty", ``, "", "", []string{"empty or truncated"}},
		{"truncated", `{"servers":{`, "", "", []string{"empty or truncated"}},
		{"trailing data", `{} {}`, "", "", []string{"after the top-level object"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(tc.doc), "/etc/mcpx.json")
			if err == nil {
				t.Fatalf("no error; config = %+v", cfg)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "config /etc/mcpx.json: ") {
				t.Errorf("message %q does not name the source", msg)
			}
			var found *config.Problem
			for _, e := range configErrors(t, err) {
				if e.Server == tc.server && e.Field == tc.field {
					found = e
				}
			}
			if found == nil {
				t.Fatalf("no problem with server %q and field %q in:\n%s", tc.server, tc.field, msg)
			}
			one := found.Error()
			if tc.server != "" && !strings.Contains(one, `server "`+tc.server+`"`) {
				t.Errorf("%q does not name the server", one)
			}
			if tc.field != "" && !strings.Contains(one, tc.field) {
				t.Errorf("%q does not name the field", one)
			}
			for _, w := range tc.want {
				if !strings.Contains(one, w) {
					t.Errorf("%q does not contain %q", one, w)
				}
			}
		})
	}
}

func TestParseReportsAllErrors(t *testing.T) {
	doc := `{
		"servers": {
			"a": {"comand": "x", "max": -3},
			"b": {"command": "y", "scope": "nope", "callTimeout": "1 minute"},
			"c": {"command": "z", "args": ["${mcpx.nope}", "${mcpx.root}", "${mcpx.cwd"]}
		},
		"pool": {"maxInstances": -1}
	}`
	_, err := config.Parse([]byte(doc), "cfg.json")
	type key struct{ server, field string }
	var got []key
	for _, e := range configErrors(t, err) {
		got = append(got, key{e.Server, e.Field})
	}
	want := []key{
		{"", "pool.maxInstances"},
		{"a", "comand"},
		{"a", "max"},
		{"b", "callTimeout"},
		{"b", "scope"},
		{"c", "args[0]"},
		{"c", "args[2]"},
	}
	less := func(a, b key) bool { return a.server+"\x00"+a.field < b.server+"\x00"+b.field }
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(less), cmp.AllowUnexported(key{})); diff != "" {
		t.Errorf("problems (-want +got):\n%s\nerror: %v", diff, err)
	}
	if n := strings.Count(err.Error(), "\n\t"); n != len(want) {
		t.Errorf("message lists %d problems, want %d:\n%v", n, len(want), err)
	}
}

func TestParseDefaults(t *testing.T) {
	doc := `{
		"servers": {
			"cmd": {"command": "git-mcp"},
			"web": {"url": "https://example.com/mcp"},
			"own": {"command": "x", "scope": "session", "sharing": "exclusive", "max": 2,
			        "idleTimeout": "1m", "callTimeout": "10s", "startTimeout": "5s"}
		},
		"pool": {"idleTimeout": "2m"}
	}`
	cfg, err := config.Parse([]byte(doc), "")
	if err != nil {
		t.Fatal(err)
	}
	want := &config.Config{
		Servers: map[string]*config.Server{
			"cmd": {Name: "cmd", Command: "git-mcp", Scope: config.ScopeWorktree, Sharing: config.SharingShared, Max: 4,
				IdleTimeout: dur(2 * time.Minute), CallTimeout: dur(5 * time.Minute), StartTimeout: dur(30 * time.Second)},
			"web": {Name: "web", URL: "https://example.com/mcp", Scope: config.ScopeGlobal, Sharing: config.SharingShared, Max: 4,
				IdleTimeout: dur(2 * time.Minute), CallTimeout: dur(5 * time.Minute), StartTimeout: dur(30 * time.Second)},
			"own": {Name: "own", Command: "x", Scope: config.ScopeSession, Sharing: config.SharingExclusive, Max: 2,
				IdleTimeout: dur(time.Minute), CallTimeout: dur(10 * time.Second), StartTimeout: dur(5 * time.Second)},
		},
		Pool: config.Pool{MaxInstances: 64, IdleTimeout: config.IdleTimeouts{Default: dur(2 * time.Minute)}, ReapInterval: dur(30 * time.Second), WaitTimeout: dur(10 * time.Second), ExecWatch: config.Period(pool.DefaultExecWatch)},
		Limits: config.Limits{MaxDepth: config.DefaultMaxDepth, MaxMessageBytes: pool.DefaultMaxMessageBytes, RootsWait: dur(pool.DefaultRootsWait), ExecHashMax: pool.DefaultExecHashMax,
			InputWait: dur(config.DefaultInputWait)},
		Nix: config.Nix{Timeout: dur(nixresolve.DefaultTimeout), Refresh: config.NixRefreshNever},
		Records: config.Records{Enabled: ptr(true), MaxBytes: calllog.DefaultMaxBytes, MaxAge: dur(calllog.DefaultMaxAge),
			MaxFiles: calllog.DefaultMaxFiles},
	}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}

	empty, err := config.Parse([]byte(`{}`), "")
	if err != nil {
		t.Fatal(err)
	}
	wantPool := config.Pool{MaxInstances: 64, IdleTimeout: config.IdleTimeouts{Default: dur(5 * time.Minute)}, ReapInterval: dur(30 * time.Second), WaitTimeout: dur(10 * time.Second), ExecWatch: config.Period(pool.DefaultExecWatch)}
	if diff := cmp.Diff(wantPool, empty.Pool); diff != "" {
		t.Errorf("pool defaults (-want +got):\n%s", diff)
	}
	if empty.Servers == nil || len(empty.Servers) != 0 {
		t.Errorf("servers = %#v, want empty", empty.Servers)
	}
	// A server's default idle timeout is the pool's, defaulted or not.
	one, err := config.Parse([]byte(`{"servers":{"a":{"command":"x"}}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := one.Servers["a"].IdleTimeout.D(); got != 5*time.Minute {
		t.Errorf("idleTimeout = %v, want the pool default 5m", got)
	}
}

func dur(d time.Duration) config.Duration { return config.Duration(d) }

func TestParseShapes(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      map[string]*config.Server // only the fields set here are compared
	}{
		{"claude desktop", `{"mcpServers": {
				"filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${mcpx.root}"],
				               "env": {"DEBUG": "1"}}}}`,
			map[string]*config.Server{"filesystem": {Command: "npx",
				Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "${mcpx.root}"}, Env: map[string]string{"DEBUG": "1"}}}},
		{"cursor", `{"mcpServers": {
				"local": {"command": "gopls", "args": ["mcp"]},
				"remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}}`,
			map[string]*config.Server{
				"local":  {Command: "gopls", Args: []string{"mcp"}},
				"remote": {URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}}}},
		{"vs code", `{"servers": {
				"git": {"type": "stdio", "command": "uvx", "args": ["mcp-server-git"]},
				"api": {"type": "http", "url": "http://localhost:3000/mcp"},
				"api2": {"type": "streamable-http", "url": "http://localhost:3001/mcp"}}}`,
			map[string]*config.Server{
				"git":  {Command: "uvx", Args: []string{"mcp-server-git"}},
				"api":  {URL: "http://localhost:3000/mcp"},
				"api2": {URL: "http://localhost:3001/mcp"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(tc.doc), "")
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.Servers) != len(tc.want) {
				t.Errorf("got %d servers, want %d", len(cfg.Servers), len(tc.want))
			}
			for name, w := range tc.want {
				g := cfg.Servers[name]
				if g == nil {
					t.Errorf("no server %q", name)
					continue
				}
				w.Name = name
				got := &config.Server{Name: g.Name, Command: g.Command, Args: g.Args, Env: g.Env, URL: g.URL, Headers: g.Headers}
				if diff := cmp.Diff(w, got); diff != "" {
					t.Errorf("server %s (-want +got):\n%s", name, diff)
				}
			}
		})
	}
}

func TestPlaceholdersPassThrough(t *testing.T) {
	doc := `{"servers":{"x":{
		"command": "${mcpx.root}/bin/tool",
		"args": ["${HOME}", "${mcpxHome}", "$mcpx.root", "${mcpx.root}${mcpx.cwd}", "{mcpx.nope}", "$${x}"],
		"env": {"ROOT": "${mcpx.root}", "CWD": "${mcpx.cwd}", "OTHER": "${env:FOO}"},
		"cwd": "${mcpx.root}/sub"}}}`
	cfg, err := config.Parse([]byte(doc), "")
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Servers["x"]
	if s.Command != "${mcpx.root}/bin/tool" || s.Args[3] != "${mcpx.root}${mcpx.cwd}" || s.Cwd != "${mcpx.root}/sub" || s.Env["OTHER"] != "${env:FOO}" {
		t.Errorf("placeholders changed: %+v", s)
	}
	for _, cwd := range []string{"/abs", "${mcpx.cwd}", "${mcpx.root}"} {
		doc := `{"servers":{"x":{"command":"a","cwd":"` + cwd + `"}}}`
		if _, err := config.Parse([]byte(doc), ""); err != nil {
			t.Errorf("cwd %q: %v", cwd, err)
		}
	}
	// ${mcpx.root} in a url is allowed for a scope with a root (a url server
	// is global by default, which has none: that is an error, tested above).
	if _, err := config.Parse([]byte(`{"servers":{"x":{"url":"http://h/${mcpx.root}","scope":"worktree"}}}`), ""); err != nil {
		t.Errorf("url with placeholder: %v", err)
	}
}

// fullConfig uses every field, so that the round trip proves each JSON name
// Parse accepts is one it writes.
const fullConfig = `{
	"servers": {
		"fs": {
			"command": "npx",
			"args": ["-y", "@modelcontextprotocol/server-filesystem", "${mcpx.root}", "${mcpx.cwd}"],
			"env": {"ROOT": "${mcpx.root}", "HOME": "${HOME}"},
			"cwd": "${mcpx.root}/sub",
			"scope": "repo",
			"sharing": "exclusive",
			"max": 2,
			"idleTimeout": "90s",
			"callTimeout": "1m",
			"startTimeout": "10s",
			"tags": ["files", "npm"],
			"toolTags": {"read_file": ["read"], "write_file": ["write", "destructive"]},
			"description": "files under the repo",
			"prelude": "Paths are relative to the repository root.\nlist_allowed_directories names them."
		},
		"web": {
			"url": "https://example.com/mcp",
			"headers": {"Authorization": "Bearer ${TOKEN}"}
		}
	},
	"pool": {"maxInstances": 10, "idleTimeout": "10m", "reapInterval": "1m", "waitTimeout": "20s"}
}`

func TestConfigShowRoundTrip(t *testing.T) {
	cfg, err := config.Parse([]byte(fullConfig), "a.json")
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"${mcpx.root}/sub"`, `"idleTimeout": "1m30s"`, `"callTimeout": "5m0s"`, `"reapInterval": "1m0s"`, `"waitTimeout": "20s"`, `"scope": "global"`, `"Bearer ${TOKEN}"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("shown config lacks %s:\n%s", want, out)
		}
	}
	again, err := config.Parse(out, "b.json")
	if err != nil {
		t.Fatalf("shown config does not parse: %v\n%s", err, out)
	}
	if diff := cmp.Diff(cfg, again, cmpopts.IgnoreFields(config.Config{}, "Source")); diff != "" {
		t.Errorf("round trip (-first +second):\n%s", diff)
	}
}

func TestDuration(t *testing.T) {
	b, err := json.Marshal(struct{ D config.Duration }{config.Duration(90 * time.Second)})
	if err != nil || string(b) != `{"D":"1m30s"}` {
		t.Errorf("marshal = %s, %v", b, err)
	}
	var d config.Duration
	if err := json.Unmarshal([]byte(`"1h2m"`), &d); err != nil || d.D() != time.Hour+2*time.Minute {
		t.Errorf("unmarshal = %v, %v", d, err)
	}
	if err := json.Unmarshal([]byte(`null`), &d); err != nil || d.D() != time.Hour+2*time.Minute {
		t.Errorf("null changed the value: %v, %v", d, err)
	}
	for _, bad := range []string{`90`, `"90"`, `""`, `true`, `"5 minutes"`} {
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("unmarshal %s: no error", bad)
		}
	}
	if s := config.Duration(1500 * time.Millisecond).String(); s != "1.5s" {
		t.Errorf("String = %q", s)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.json")
	_, err := config.Load(missing)
	if err == nil || !strings.Contains(err.Error(), missing) || !errors.Is(err, fs.ErrNotExist) || !errors.As(err, new(*config.Problem)) {
		t.Errorf("missing file: %v", err)
	}

	good := filepath.Join(dir, "config.json")
	os.WriteFile(good, []byte(fullConfig), 0o600)
	cfg, err := config.Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Source != good || len(cfg.Servers) != 2 {
		t.Errorf("loaded %+v", cfg)
	}

	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"servers":{"x":{}}}`), 0o600)
	_, err = config.Load(bad)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), `server "x"`) {
		t.Errorf("bad file: %v", err)
	}
}

func TestDefault(t *testing.T) {
	cfg := config.Default("/usr/bin/mcpx")
	demo := cfg.Servers["demo"]
	if len(cfg.Servers) != 1 || demo == nil {
		t.Fatalf("servers = %v", cfg.Servers)
	}
	want := &config.Server{Name: "demo", Command: "/usr/bin/mcpx", Args: []string{"demo-server"},
		Scope: config.ScopeWorktree, Sharing: config.SharingShared, Max: 4, Tags: []string{"demo"},
		IdleTimeout: dur(5 * time.Minute), CallTimeout: dur(5 * time.Minute), StartTimeout: dur(30 * time.Second)}
	if diff := cmp.Diff(want, demo, cmpopts.IgnoreFields(config.Server{}, "Description")); diff != "" {
		t.Errorf("demo (-want +got):\n%s", diff)
	}
	if demo.Description == "" || cfg.Pool.MaxInstances != 64 || cfg.Source != "" {
		t.Errorf("config = %+v", cfg)
	}
	// What `mcpx config show` prints for it parses back to the same.
	out, _ := json.Marshal(cfg)
	again, err := config.Parse(out, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cfg, again); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestNormalize(t *testing.T) {
	cfg := &config.Config{Servers: map[string]*config.Server{"a": {Command: "x"}}}
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	if a := cfg.Servers["a"]; a.Name != "a" || a.Max != 4 || a.Scope != config.ScopeWorktree || cfg.Pool.MaxInstances != 64 {
		t.Errorf("normalized %+v %+v", a, cfg.Pool)
	}
	bad := &config.Config{Servers: map[string]*config.Server{"b": {Command: "x", Args: []string{"${mcpx.x}"}}, "c": nil}}
	errs := configErrors(t, bad.Normalize())
	if len(errs) != 2 || errs[0].Server != "b" || errs[0].Field != "args[0]" || errs[1].Server != "c" {
		t.Errorf("problems = %v", errs)
	}
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		fullConfig,
		`{}`,
		`{"mcpServers":{"a":{"type":"stdio","command":"x","args":["${mcpx.root}"]}}}`,
		`{"servers":{"a":{"url":"http://h/mcp","headers":{"A":"${mcpx.cwd}"}}},"pool":{"idleTimeout":"1s"}}`,
		`{"servers":{"a":{"command":"x","cwd":"${mcpx.","env":{"":"${mcpx}"}}}}`,
		`{"servers":{"a":{"command":"x","idleTimeout":"-1h","max":-1,"scope":"x"}}}`,
		`{"servers":{"a":{"command":"x"},"a":{}},"servers":1}`,
		`[1, 2]`,
		`{"servers":{"a":{"comand":"x"}}`,
		`{"inputs":[{"id":"k"}],"servers":{"a":{"type":"stdio","command":"x","env":{"K":"${input:k}"},"disabled":true,"dev":{}},"b":{"url":"http://h/sse","x":1}}}`,
		`{"mcpServers":{"a":{"transportType":"streamableHttp","url":"http://h/mcp","autoApprove":[],"timeout":60}},"globalShortcut":""}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.Parse(data, "fuzz.json")
		if err != nil {
			if errs := configErrors(t, err); len(errs) == 0 {
				t.Fatalf("empty config.Error for %q", data)
			}
			_ = err.Error()
			return
		}
		// A config that parses shows as JSON that parses to the same config.
		out, err := json.Marshal(cfg)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		again, err := config.Parse(out, "fuzz.json")
		if err != nil {
			t.Fatalf("shown config %s does not parse: %v", out, err)
		}
		// Warnings and disabled servers are the document's, not the config's.
		ignore := cmpopts.IgnoreFields(config.Config{}, "Warnings", "Disabled")
		if diff := cmp.Diff(cfg, again, cmpopts.EquateEmpty(), ignore); diff != "" {
			t.Fatalf("round trip of %q (-first +second):\n%s", data, diff)
		}
	})
}

func ExampleParse_errors() {
	doc := `{
	  "mcpServers": {
	    "git": {"comand": "uvx", "args": ["mcp-server-git", "--repository", "${mcpx.rot}"]},
	    "fs": {"type": "stdio", "command": "npx", "cwd": "src", "idleTimeout": "10"}
	  }
	}`
	_, err := config.Parse([]byte(doc), "config.json")
	fmt.Println(err)
	// Output:
	// config config.json: 4 problems:
	// 	server "git": unknown field "comand"; did you mean "command"?
	// 	server "git": unknown placeholder ${mcpx.rot} (field args[2]); did you mean ${mcpx.root}? (known: ${mcpx.root}, ${mcpx.cwd}, ${mcpx.instance}, ${mcpx.index}, ${mcpx.key}, ${mcpx.tmpdir}, ${mcpx.alloc.NAME} for a NAME in the server's allocate block)
	// 	server "fs": invalid duration "10": want a Go duration such as "90s" or "5m" (field idleTimeout)
	// 	server "fs": cwd "src" is relative; use an absolute path, or ${mcpx.root}/src for a directory under the instance root
}

// TestRecordsSection: the call log's settings parse, default, and are
// checked with errors naming the field.
func TestRecordsSection(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"records":{"enabled":false,"bodies":true,"maxBytes":65536,"maxAge":"24h","maxFiles":3}}`), "r.json")
	if err != nil {
		t.Fatal(err)
	}
	want := config.Records{Enabled: ptr(false), Bodies: true, MaxBytes: 65536, MaxAge: dur(24 * time.Hour), MaxFiles: 3}
	if diff := cmp.Diff(want, cfg.Records); diff != "" || cfg.Records.On() {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	def, err := config.Parse([]byte(`{}`), "r.json")
	if err != nil || !def.Records.On() || def.Records.Bodies || def.Records.MaxFiles != calllog.DefaultMaxFiles {
		t.Fatalf("default records = %+v, %v", def.Records, err)
	}
	for doc, want := range map[string]string{
		`{"records":{"maxBytes":-1}}`:   "records.maxBytes",
		`{"records":{"maxBytes":100}}`:  "too small to hold a record",
		`{"records":{"maxFiles":-2}}`:   "records.maxFiles",
		`{"records":{"maxAge":"-1h"}}`:  "records.maxAge",
		`{"records":{"maxAge":3600}}`:   "records.maxAge",
		`{"records":{"enabled":"yes"}}`: "records.enabled",
		`{"records":{"maxFils":3}}`:     `did you mean "maxFiles"?`,
		`{"record":{}}`:                 `did you mean "records"?`,
		`{"records":[]}`:                "records must be an object",
	} {
		if _, err := config.Parse([]byte(doc), "r.json"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", doc, err, want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestLimitsMaxMessageBytes(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"servers":{"a":{"command":"x"}},"limits":{"maxMessageBytes":1048576}}`), "l.json")
	if err != nil || cfg.Limits.MaxMessageBytes != 1<<20 {
		t.Fatalf("limits = %+v, %v", cfg.Limits, err)
	}
	cfg, err = config.Parse([]byte(`{"servers":{"a":{"command":"x"}}}`), "l.json")
	if err != nil || cfg.Limits.MaxMessageBytes != pool.DefaultMaxMessageBytes {
		t.Fatalf("default limits = %+v, %v", cfg.Limits, err)
	}
	for _, doc := range []string{`{"limits":{"maxMessageBytes":-1}}`, `{"limits":{"maxMesageBytes":1}}`, `{"limits":{"maxMessageBytes":"big"}}`} {
		if _, err := config.Parse([]byte(doc), "l.json"); err == nil || !strings.Contains(err.Error(), "limits.maxMes") {
			t.Errorf("%s: %v, want an error naming limits.maxMessageBytes", doc, err)
		}
	}
}

// TestExecWatchPeriod: pool.execWatch is a duration, "off" or "0s" (off),
// and the default when absent.
func TestExecWatchPeriod(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want time.Duration
	}{
		{`{}`, pool.DefaultExecWatch},
		{`{"pool":{"execWatch":"2s"}}`, 2 * time.Second},
		{`{"pool":{"execWatch":"off"}}`, -1},
		{`{"pool":{"execWatch":"0s"}}`, -1},
	} {
		cfg, err := config.Parse([]byte(tc.doc), "w.json")
		if err != nil {
			t.Fatalf("%s: %v", tc.doc, err)
		}
		if got := cfg.Pool.ExecWatch.D(); got != tc.want {
			t.Errorf("%s: execWatch %v, want %v", tc.doc, got, tc.want)
		}
	}
	if b, _ := json.Marshal(config.PeriodOff); string(b) != `"off"` {
		t.Errorf("off marshals as %s", b)
	}
}

// TestNixSection: nix: commands parse (args, env and cwd as for any
// command) and the nix settings are read as written.
func TestNixSection(t *testing.T) {
	doc := `{
		"servers": {"tool": {"command": "nix:github:owner/repo/v1#tool", "args": ["--stdio"], "env": {"A": "b"}, "environment": "flake:path:/src/app#dev"},
			"iso": {"command": "jq", "environment": "isolated", "dependencies": ["nix:nixpkgs#jq", "nix:./tools#lint"]},
			"isoNix": {"command": "nix:nixpkgs#deno", "environment": "isolated"}},
		"nix": {"binary": "/opt/nix/bin/nix", "offline": true, "timeout": "5m", "config": ["substituters = https://cache.example.org"], "refresh": "1h"}
	}`
	cfg, err := config.Parse([]byte(doc), "")
	if err != nil {
		t.Fatal(err)
	}
	want := config.Nix{Binary: "/opt/nix/bin/nix", Offline: true, Timeout: dur(5 * time.Minute), Config: []string{"substituters = https://cache.example.org"}, Refresh: "1h"}
	if diff := cmp.Diff(want, cfg.Nix); diff != "" {
		t.Errorf("nix (-want +got):\n%s", diff)
	}
	if got := cfg.Nix.RefreshInterval(); got != time.Hour {
		t.Errorf("refresh interval %s, want 1h", got)
	}
	if s := cfg.Servers["iso"]; s.Environment != config.EnvironmentIsolated || !slices.Equal(s.Dependencies, []string{"nix:nixpkgs#jq", "nix:./tools#lint"}) {
		t.Errorf("isolated server %+v", s)
	}
	if s := cfg.Servers["tool"]; s.Command != "nix:github:owner/repo/v1#tool" || len(s.Args) != 1 || s.Env["A"] != "b" || s.Environment != "flake:path:/src/app#dev" {
		t.Errorf("server %+v", s)
	}
}

func TestScopePolicy(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"servers":{
		"closed":{"command":"a","scope":"session"},
		"open":{"command":"a","scope":"session","scopePolicy":{"allowOverride":true}},
		"some":{"command":"a","scope":"session","scopePolicy":{"allow":["session","call"],"allowOverride":true}},
		"inert":{"command":"a","scope":"session","scopePolicy":{"allow":["session","call"]}}}}`), "c.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		server string
		kind   config.ScopeKind
		want   bool
	}{
		{"closed", config.ScopeSession, true}, {"closed", config.ScopeCall, false},
		{"open", config.ScopeGlobal, true}, {"open", config.ScopeCall, true},
		{"some", config.ScopeCall, true}, {"some", config.ScopeGlobal, false},
		{"inert", config.ScopeCall, false}, {"inert", config.ScopeSession, true},
	} {
		s := cfg.Servers[tc.server]
		if got := s.ScopePolicy.Allows(s.Scope, tc.kind); got != tc.want {
			t.Errorf("%s allows %s: %v, want %v", tc.server, tc.kind, got, tc.want)
		}
	}
	if len(cfg.Warnings) != 1 || cfg.Warnings[0].Server != "inert" || cfg.Warnings[0].Field != "scopePolicy.allow" {
		t.Errorf("warnings %v, want one for inert's scopePolicy.allow without allowOverride", cfg.Warnings)
	}
}
