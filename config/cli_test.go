package config_test

import (
	"strings"
	"testing"

	"mcpx.dev/mcpx/config"
)

// TestCLIErrors: a server is one of command, url, openapi and cli, and a
// cli block's tools are checked before anything runs; each problem names
// the server and the field, with a did-you-mean for a misspelt key.
func TestCLIErrors(t *testing.T) {
	for _, tc := range []struct{ name, doc, server, field, want string }{
		{"command and cli", `{"servers":{"x":{"command":"a","cli":{"tools":{"t":{"args":["ls"]}}}}}}`,
			"x", "cli", "both command and cli are set"},
		{"url and openapi", `{"servers":{"x":{"url":"http://h/mcp","openapi":{"spec":"p.yaml"}}}}`,
			"x", "url", "url is set beside openapi"},
		{"openapi and cli", `{"servers":{"x":{"openapi":{"spec":"p.yaml"},"cli":{"tools":{"t":{"args":["ls"]}}}}}}`,
			"x", "cli", "cli is set beside openapi"},
		{"nothing", `{"servers":{"x":{"env":{"A":"b"}}}}`,
			"x", "command", `"cli" for command lines as tools`},
		{"cli misspelt", `{"servers":{"x":{"clii":{"tools":{}}}}}`,
			"x", "clii", `did you mean "cli"?`},
		{"tools misspelt", `{"servers":{"x":{"cli":{"tool":{}}}}}`,
			"x", "cli.tool", `did you mean "tools"?`},
		{"args misspelt", `{"servers":{"x":{"cli":{"tools":{"t":{"arg":["ls"]}}}}}}`,
			"x", "cli.tools.t.arg", `did you mean "args"?`},
		{"no tools", `{"servers":{"x":{"cli":{"tools":{}}}}}`,
			"x", "cli.tools", "a cli server has no tools"},
		{"empty args", `{"servers":{"x":{"cli":{"tools":{"t":{"args":[]}}}}}}`,
			"x", "cli.tools.t.args", "empty; args[0] is the program"},
		{"args not strings", `{"servers":{"x":{"cli":{"tools":{"t":{"args":["ls",1]}}}}}}`,
			"x", "cli.tools.t.args", "want an array of strings"},
		{"placeholder inside an argument", `{"servers":{"x":{"cli":{"tools":{"t":{"args":["gh","--limit={limit}"]}}}}}}`,
			"x", "cli.tools.t.args[1]", "a placeholder must be a whole argument"},
		{"placeholder as the program", `{"servers":{"x":{"cli":{"tools":{"t":{"args":["{prog}"]}}}}}}`,
			"x", "cli.tools.t.args[0]", "the program may not be a placeholder"},
		{"undeclared placeholder", `{"servers":{"x":{"cli":{"tools":{"t":{"args":["ls","{dir}"],"input":{"type":"object","properties":{"path":{"type":"string"}}}}}}}}}`,
			"x", "cli.tools.t.args[1]", `placeholder {dir} is not a property of input; add "dir"`},
		{"mcpx placeholder", `{"servers":{"x":{"cli":{"tools":{"t":{"args":["ls","${mcpx.root}"]}}}}}}`,
			"x", "cli.tools.t.args[1]", "${mcpx.*} placeholder"},
		{"input not an object schema", `{"servers":{"x":{"cli":{"tools":{"t":{"args":["ls"],"input":{"type":"array"}}}}}}}`,
			"x", "cli.tools.t.input", "must be an object schema"},
		{"unknown output", `{"servers":{"x":{"cli":{"tools":{"t":{"args":["ls"],"output":"jsn"}}}}}}`,
			"x", "cli.tools.t.output", `did you mean "json"?`},
		{"bad tool name", `{"servers":{"x":{"cli":{"tools":{"pr.list":{"args":["gh"]}}}}}}`,
			"x", "cli.tools.pr.list", `"pr.list" is not a tool name`},
		{"name too long for the endpoint", `{"servers":{"x":{"cli":{"tools":{"` + strings.Repeat("t", 62) + `":{"args":["gh"]}}}}}}`,
			"x", "cli.tools." + strings.Repeat("t", 62), "over 64 characters"},
		{"args on a cli server", `{"servers":{"x":{"args":["a"],"cli":{"tools":{"t":{"args":["ls"]}}}}}}`,
			"x", "args", "cli.tools.NAME.args"},
		{"env on an openapi server", `{"servers":{"x":{"env":{"A":"b"},"openapi":{"spec":"p.yaml"}}}}`,
			"x", "env", "env is set beside openapi"},
		{"a nix: program with no attribute", `{"servers":{"x":{"cli":{"tools":{"t":{"args":["nix:path:/src/tool#"]}}}}}}`,
			"x", "cli.tools.t.args[0]", "nix:"},
		{"ready on a cli server", `{"servers":{"x":{"ready":{"stderr":"x"},"cli":{"tools":{"t":{"args":["ls"]}}}}}}`,
			"x", "ready", "a cli server has no stderr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.doc), "/etc/mcpx.json")
			if err == nil {
				t.Fatal("no error")
			}
			var found *config.Problem
			for _, e := range configErrors(t, err) {
				if e.Server == tc.server && e.Field == tc.field {
					found = e
				}
			}
			if found == nil {
				t.Fatalf("no problem with server %q and field %q in:\n%s", tc.server, tc.field, err)
			}
			if !strings.Contains(found.Error(), tc.want) {
				t.Errorf("%q does not contain %q", found.Error(), tc.want)
			}
		})
	}
}

// TestCLIDefaults: a cli server is scoped to the worktree by default, in
// mcpx's format and a client's; an openapi server is global.
func TestCLIDefaults(t *testing.T) {
	for _, doc := range []string{
		`{"servers":{"git":{"cli":{"tools":{"log":{"args":["git","log","-n","{count}"],"input":{"type":"object","properties":{"count":{"type":"integer"}}},"output":"text"}}}},"api":{"openapi":{"spec":"p.yaml"}}}}`,
		`{"mcpServers":{"git":{"cli":{"tools":{"log":{"args":["git","log","-n","{count}"],"input":{"type":"object","properties":{"count":{"type":"integer"}}},"output":"text"}}}},"api":{"openapi":{"spec":"p.yaml"}}}}`,
	} {
		cfg, err := config.Parse([]byte(doc), "/etc/mcpx.json")
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		git, api := cfg.Servers["git"], cfg.Servers["api"]
		if git.Scope != config.ScopeWorktree || api.Scope != config.ScopeGlobal {
			t.Errorf("%s: scopes %q and %q, want worktree and global", doc, git.Scope, api.Scope)
		}
		if tool := git.CLI.Tools["log"]; tool == nil || strings.Join(tool.Args, " ") != "git log -n {count}" || tool.Output != "text" || !strings.Contains(string(tool.Input), `"integer"`) {
			t.Errorf("decoded tool = %+v", tool)
		}
	}
}
