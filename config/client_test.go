package config_test

import (
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"mcpx.dev/mcpx/config"
)

// TestClientFormats loads a copy of each client's config file format, as
// their documentation shows it (testdata/*.json), and checks exactly what is
// served, what is ignored with a warning, and what is refused.
func TestClientFormats(t *testing.T) {
	type server struct {
		Command string
		Args    []string
		Env     map[string]string
		URL     string
		Headers map[string]string
	}
	const only = "(mcpx expands only ${mcpx.root} and ${mcpx.cwd})"
	for _, tc := range []struct {
		file     string
		servers  map[string]server // nil when the file is refused
		disabled []string
		warnings []string // Problem.Error() of each, in order
		errors   []string
	}{
		{
			file: "vscode-mcp.json",
			servers: map[string]server{
				"memory": {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"}},
				"fetch":  {Command: "uvx", Args: []string{"mcp-server-fetch"}},
				"github": {URL: "https://api.githubcopilot.com/mcp/"},
				"files":  {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "${workspaceFolder}"}},
			},
			warnings: []string{
				`VS Code inputs ignored: no server uses them, and mcpx never prompts; remove them, or keep them for VS Code`,
				`server "github": unknown field "gallery", ignored; known fields: …`,
				`server "files": ${workspaceFolder} is not expanded: the server gets it as written (field args[2]); use ${mcpx.root}, the caller's worktree or repository`,
			},
		},
		{
			file: "vscode-inputs.json",
			errors: []string{
				`server "perplexity": envFile is not supported: mcpx does not read environment files; copy the variables the server needs into "env"`,
				`server "perplexity": ${input:perplexity-key} is a VS Code input, which mcpx does not support: it never prompts (field env.PERPLEXITY_API_KEY); write the value itself in the config ` + only,
				`server "remote": ${input:api-token} is a VS Code input, which mcpx does not support: it never prompts (field headers.Authorization); write the value itself in the config ` + only,
				`server "legacy": the legacy SSE transport is not supported: mcpx speaks streamable HTTP only (field type); use the server's streamable-HTTP endpoint (often /mcp) with type "http"`,
			},
		},
		{
			file: "claude_desktop_config.json",
			servers: map[string]server{
				"filesystem": {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/Users/username/Desktop", "/Users/username/Downloads"}},
				"brave-search": {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-brave-search"},
					Env: map[string]string{"BRAVE_API_KEY": "BSA-example-key"}},
			},
			warnings: []string{
				`unknown top-level field "isUsingBuiltInNodeForMcp", ignored; known fields: …`,
			},
		},
		{
			file: "cline_mcp_settings.json",
			servers: map[string]server{
				"git": {Command: "uvx", Args: []string{"mcp-server-git"}},
				"weather": {Command: "node", Args: []string{"/Users/me/Documents/Cline/MCP/weather-server/build/index.js"},
					Env: map[string]string{"OPENWEATHER_API_KEY": "example-key"}},
				"docs": {URL: "https://docs.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer example-token"}},
			},
			disabled: []string{"old-search", "scratch"},
			warnings: []string{
				`server "old-search": disabled, but the legacy SSE transport is not supported: mcpx speaks streamable HTTP only (field transportType); use the server's streamable-HTTP endpoint (often /mcp) with type "http"`,
				`server "scratch": disabled, but cwd "scratch" is relative; use an absolute path, or ${mcpx.root}/scratch for a directory under the instance root`,
			},
		},
		{
			file: "cursor-mcp.json",
			warnings: []string{
				`server "postgres": ${env:PGPASSWORD} is not expanded: the server gets it as written (field env.PGPASSWORD); write the value itself ` + only,
				`server "linear": ${env:LINEAR_TOKEN} is not expanded: the server gets it as written (field headers.Authorization); write the value itself ` + only,
				`server "local-tools": ${userHome} is not expanded: the server gets it as written (field args[0]); write the value itself ` + only,
			},
			errors: []string{
				`server "local-tools": envFile is not supported: mcpx does not read environment files; copy the variables the server needs into "env"`,
			},
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", tc.file)
			cfg, err := config.Load(path)
			var warnings []*config.Problem
			if err != nil {
				var ce *config.Error
				if !errors.As(err, &ce) {
					t.Fatalf("error %v (%T) is not a *config.Error", err, err)
				}
				var got []string
				for _, e := range configErrors(t, err) {
					got = append(got, e.Error())
				}
				if diff := cmp.Diff(tc.errors, got); diff != "" {
					t.Errorf("errors (-want +got):\n%s", diff)
				}
				if !strings.HasPrefix(err.Error(), "config "+path+": ") {
					t.Errorf("error %q does not name the file", err)
				}
				warnings = ce.Warnings
			} else {
				if tc.errors != nil {
					t.Fatalf("loaded, want errors %q", tc.errors)
				}
				got := map[string]server{}
				for name, s := range cfg.Servers {
					got[name] = server{s.Command, s.Args, s.Env, s.URL, s.Headers}
				}
				if diff := cmp.Diff(tc.servers, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("servers (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.disabled, cfg.Disabled); diff != "" {
					t.Errorf("disabled (-want +got):\n%s", diff)
				}
				warnings = cfg.Warnings
			}
			var got []string
			for _, w := range warnings {
				got = append(got, stable(w.Error()))
			}
			if diff := cmp.Diff(tc.warnings, got); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// stable shortens the list of known fields in a hint, which grows with
// every field mcpx learns.
func stable(s string) string {
	return regexp.MustCompile(`known fields: [a-zA-Z, ]+`).ReplaceAllString(s, "known fields: …")
}

// TestClientKeys: mcpx's own format stays strict, the client keys mcpx
// understands are accepted in any file, and a client's file is recognised
// by its shape.
func TestClientKeys(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		errors    []string
		warnings  []string
		disabled  []string
	}{
		{name: "own format: typos are errors",
			doc: `{"servers":{"a":{"command":"x","autoApprov":[],"bogus":1}},"globalShortcu":"x"}`,
			errors: []string{
				`unknown top-level field "globalShortcu"; did you mean "globalShortcut"?`,
				`server "a": unknown field "autoApprov"; did you mean "autoApprove"?`,
				`server "a": unknown field "bogus"; known fields: …`,
			}},
		{name: "own format: client keys accepted",
			doc:      `{"servers":{"a":{"command":"x","autoApprove":["t"],"alwaysAllow":[],"timeout":60,"dev":{"watch":"**"}},"b":{"command":"y","disabled":true},"c":{"command":"z","disabled":false}}}`,
			disabled: []string{"b"}},
		{name: "foreign: a typo is still an error",
			doc: `{"mcpServers":{"a":{"comand":"x","scop":"repo","autoAprove":[]}},"preferencs":{}}`,
			errors: []string{
				`unknown top-level field "preferencs"; did you mean "preferences"?`,
				`server "a": unknown field "autoAprove"; did you mean "autoApprove"?`,
				`server "a": unknown field "comand"; did you mean "command"?`,
				`server "a": unknown field "scop"; did you mean "scope"?`,
			}},
		{name: "foreign by type under servers",
			doc:      `{"servers":{"a":{"type":"stdio","command":"x","version":"1.0.0"}}}`,
			warnings: []string{`server "a": unknown field "version", ignored; known fields: …`}},
		{name: "foreign: unknown pool key",
			doc:      `{"mcpServers":{},"pool":{"size":3}}`,
			warnings: []string{`unknown field "size", ignored (field pool.size); known fields: …`}},
		{name: "foreign: mcpx keys are still checked",
			doc:    `{"mcpServers":{"a":{"command":"x","scope":"galaxy","args":"-v"}}}`,
			errors: []string{`server "a": want an array of strings, got string (field args)`, `server "a": unknown scope "galaxy"; known scopes: global, repo, worktree, cwd, session, parent-session, pid, call`}},
		{name: "an enabled sse server is an error",
			doc:    `{"mcpServers":{"a":{"url":"http://h/sse","transportType":"sse"}}}`,
			errors: []string{`server "a": the legacy SSE transport is not supported: mcpx speaks streamable HTTP only (field transportType); use the server's streamable-HTTP endpoint (often /mcp) with type "http"`}},
		{name: "type wins over transportType",
			doc: `{"mcpServers":{"a":{"url":"http://h/mcp","transportType":"sse","type":"streamableHttp"}}}`},
		{name: "transportType must agree",
			doc:    `{"mcpServers":{"a":{"command":"x","transportType":"streamableHttp"}}}`,
			errors: []string{`server "a": transportType "streamableHttp" needs a url, but command is set; use transportType "stdio" for a command server`}},
		{name: "a url that looks like SSE",
			doc:      `{"mcpServers":{"a":{"url":"https://h/sse/"},"b":{"url":"https://h/sse","type":"http"}}}`,
			warnings: []string{`server "a": url "https://h/sse/" looks like a legacy SSE endpoint; mcpx speaks streamable HTTP only; use the server's streamable-HTTP endpoint (often /mcp); if this is one, say so with type "http"`}},
		{name: "own format: a url is streamable HTTP, whatever its path",
			doc: `{"servers":{"a":{"url":"https://h/sse"}}}`},
		{name: "a client key twice",
			doc:    `{"mcpServers":{"a":{"command":"x","disabled":false,"disabled":true}}}`,
			errors: []string{`server "a": field "disabled" appears twice; keep one of them`}},
		{name: "disabled must be a bool",
			doc:    `{"mcpServers":{"a":{"command":"x","disabled":"yes"}}}`,
			errors: []string{`server "a": want true or false, got "yes" (field disabled)`}},
		{name: "an input used only by a disabled server",
			doc:      `{"inputs":[{"id":"k","type":"promptString"}],"servers":{"a":{"command":"x","env":{"K":"${input:k}"},"disabled":true}}}`,
			disabled: []string{"a"},
			warnings: []string{`server "a": disabled, but ${input:k} is a VS Code input, which mcpx does not support: it never prompts (field env.K); write the value itself in the config (mcpx expands only ${mcpx.root} and ${mcpx.cwd})`}},
		{name: "no inputs, no warning",
			doc: `{"inputs":[],"servers":{"a":{"type":"stdio","command":"x"}}}`},
		{name: "a Cline repository-path name",
			doc:    `{"mcpServers":{"github.com/modelcontextprotocol/servers/tree/main/src/git":{"command":"uvx"}}}`,
			errors: []string{`server "github.com/modelcontextprotocol/servers/tree/main/src/git": invalid server name; rename it, say to "git"; names may use only letters, digits, _ and - (they appear in URLs and in server.tool arguments)`}},
		{name: "client variables in mcpx's own format",
			doc:      `{"servers":{"a":{"command":"x","args":["${HOME}","${env:HOME}"]}}}`,
			warnings: []string{`server "a": ${env:HOME} is not expanded: the server gets it as written (field args[1]); write the value itself (mcpx expands only ${mcpx.root} and ${mcpx.cwd})`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(tc.doc), "")
			var errs, warns []string
			var ws []*config.Problem
			if err != nil {
				for _, e := range configErrors(t, err) {
					errs = append(errs, stable(e.Error()))
				}
				ws = err.(*config.Error).Warnings
			} else {
				ws = cfg.Warnings
				if diff := cmp.Diff(tc.disabled, cfg.Disabled); diff != "" {
					t.Errorf("disabled (-want +got):\n%s", diff)
				}
				for _, name := range cfg.Disabled {
					if cfg.Servers[name] != nil {
						t.Errorf("disabled server %q is served", name)
					}
				}
			}
			for _, w := range ws {
				warns = append(warns, stable(w.Error()))
			}
			if diff := cmp.Diff(tc.errors, errs); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.warnings, warns); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClientFormatSpawnsAsTheClientWould (real-use 3): a command server in
// a client's format with no scope is global with no roots; "scope" opts in
// to mcpx's semantics; "roots" is read in any file.
func TestClientFormatSpawnsAsTheClientWould(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"mcpServers": {
		"fs": {"command": "node", "args": ["index.js", "/srv/data"]},
		"scoped": {"command": "node", "scope": "worktree"},
		"off": {"command": "node", "scope": "cwd", "roots": false}}}`), "claude.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]struct {
		scope config.ScopeKind
		roots bool
	}{"fs": {config.ScopeGlobal, false}, "scoped": {config.ScopeWorktree, true}, "off": {config.ScopeCwd, false}} {
		s := cfg.Servers[name]
		if s.Scope != want.scope || s.OffersRoots() != want.roots {
			t.Errorf("%s: scope %s, roots %v; want %s, %v", name, s.Scope, s.OffersRoots(), want.scope, want.roots)
		}
	}
	own, err := config.Parse([]byte(`{"servers": {"fs": {"command": "node"}}}`), "mcpx.json")
	if err != nil {
		t.Fatal(err)
	}
	if s := own.Servers["fs"]; s.Scope != config.ScopeWorktree || !s.OffersRoots() {
		t.Errorf("mcpx format: scope %s, roots %v; want worktree with roots", s.Scope, s.OffersRoots())
	}
}
