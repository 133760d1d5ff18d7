package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"mcpx.dev/mcpx/adapter/cli/argv"
	"mcpx.dev/mcpx/nixresolve/nixspec"
)

// decodeCLI decodes a server's "cli" block field by field, so that a
// misspelt key ("arg") is an error with a did-you-mean, not ignored.
func (p *problems) decodeCLI(server string, raw json.RawMessage) *CLI {
	members, err := objectMembers(raw)
	if err != nil {
		p.add(server, "cli", "want an object, got "+clip(string(raw), 20), cliExample)
		return nil
	}
	var tools json.RawMessage
	p.decodeFields(server, "cli.", members, map[string]fieldSpec{"tools": {&tools, "an object of tool names to tools"}}, map[string]bool{})
	c := &CLI{Tools: map[string]*CLITool{}}
	if tools == nil || isNull(tools) {
		return c
	}
	named, err := objectMembers(tools)
	if err != nil {
		p.add(server, "cli.tools", "want an object of tool names to tools, got "+clip(string(tools), 20), cliExample)
		return c
	}
	for _, m := range named {
		field := "cli.tools." + m.key
		if _, dup := c.Tools[m.key]; dup {
			p.add(server, field, "defined twice", "rename or remove one of them")
			continue
		}
		fields, err := objectMembers(m.value)
		if err != nil {
			p.add(server, field, "want an object, got "+clip(string(m.value), 20), cliExample)
			continue
		}
		t := new(CLITool)
		p.decodeFields(server, field+".", fields, map[string]fieldSpec{
			"description": {&t.Description, "a string"},
			"args":        {&t.Args, "an array of strings (the argv, args[0] the program)"},
			"input":       {&t.Input, "a JSON Schema object"},
			"output":      {&t.Output, `"text" or "json"`},
		}, map[string]bool{})
		c.Tools[m.key] = t
	}
	return c
}

const cliExample = `such as {"tools": {"log": {"args": ["git", "log", "--oneline", "-n", "{count}"], "input": {"type": "object", "properties": {"count": {"type": "integer"}}}}}}`

// checkCLI checks a cli server's tools: names the MCP endpoint lists as
// they are, command lines of the argv grammar (package
// adapter/cli/argv), placeholders declared in the input schema when
// there is one, and a known output. The schema itself is compiled when the
// server is opened; a schema that does not compile fails that server.
func (p *problems) checkCLI(name string, c *CLI) {
	if len(c.Tools) == 0 {
		p.add(name, "cli.tools", "a cli server has no tools", cliExample)
		return
	}
	for _, tool := range slices.Sorted(maps.Keys(c.Tools)) {
		t, field := c.Tools[tool], "cli.tools."+tool
		if !argv.ToolName().MatchString(tool) {
			p.add(name, field, fmt.Sprintf("%q is not a tool name", tool), "use 1 to 64 letters, digits, _ and - (the name MCP clients accept, with no \".\": the CLI's server.tool)")
		} else if full := name + "__" + tool; len(full) > 64 {
			p.add(name, field, fmt.Sprintf("the MCP endpoint's name %s is over 64 characters, and would be rewritten", full), "shorten the tool's name or the server's")
		}
		if t == nil {
			p.add(name, field, "a tool is null", cliExample)
			continue
		}
		for _, pr := range argv.Check(t.Args, t.Input) {
			p.add(name, field+"."+pr.Field, pr.Msg, "")
		}
		if len(t.Args) > 0 && nixspec.Is(t.Args[0]) {
			if _, err := nixspec.Parse(t.Args[0]); err != nil {
				p.add(name, field+".args[0]", err.Error(), "write it as nix:<flakeref>#<attr>, e.g. nix:nixpkgs#jq or nix:path:/src/tool#tool")
			}
		}
		for i, a := range t.Args {
			if strings.Contains(a, "${mcpx.") {
				p.add(name, fmt.Sprintf("%s.args[%d]", field, i), "a cli argument holds a ${mcpx.*} placeholder", "a cli command runs in the caller's scope root already (its cwd); pass paths relative to it")
			}
		}
		if err := argv.CheckInput(t.Input); err != nil {
			p.add(name, field+".input", err.Error(), "")
		}
		switch t.Output {
		case "", "text", "json":
		default:
			p.add(name, field+".output", fmt.Sprintf("unknown output %q", t.Output), hintFor(t.Output, []string{"json", "text"}, "outputs"))
		}
	}
}

// kinds are the server's kinds that are set, in the order errors name
// them: command, url, openapi, cli. A valid server has exactly one.
func (s *Server) kinds() []string {
	var out []string
	for _, k := range []struct {
		name string
		set  bool
	}{{"command", s.Command != ""}, {"url", s.URL != ""}, {"openapi", s.OpenAPI != nil}, {"cli", s.CLI != nil}} {
		if k.set {
			out = append(out, k.name)
		}
	}
	return out
}

// checkAdapter checks an adapter server (openapi or cli): the fields that
// belong to another kind, and the cli block. A cli server's commands get
// env, cwd and inheritEnv as a command server's child would; an OpenAPI
// service runs no process, so it has none of them.
func (p *problems) checkAdapter(name string, s *Server, t transport) {
	kind, other := "cli", map[string]bool{"args": len(s.Args) > 0, "headers": len(s.Headers) > 0}
	if s.OpenAPI != nil {
		kind, other = "openapi", map[string]bool{"args": len(s.Args) > 0, "headers": len(s.Headers) > 0,
			"env": len(s.Env) > 0, "cwd": s.Cwd != "", "inheritEnv": !s.InheritEnv.IsZero()}
	}
	for _, field := range slices.Sorted(maps.Keys(other)) {
		if !other[field] {
			continue
		}
		hint := "remove it; an OpenAPI service runs no process"
		switch {
		case field == "args":
			hint = "remove it; a cli tool's argv is cli.tools.NAME.args"
		case field == "headers" && kind == "openapi":
			hint = "move them to openapi.headers"
		case field == "headers":
			hint = "remove it; a cli server sends no HTTP request"
		}
		p.add(name, field, fmt.Sprintf("%s is not for %s servers", field, kind), hint)
	}
	if t.value != "" {
		p.add(name, t.field, fmt.Sprintf("%s is for command and url servers, not %s", t.field, kind), fmt.Sprintf("remove %s", t.field))
	}
	if s.Environment != "" {
		p.add(name, "environment", fmt.Sprintf("a %s server has no execution environment", kind), "remove environment")
	}
	if s.Ready != nil {
		p.add(name, "ready", fmt.Sprintf("ready.stderr is for stdio servers; a %s server has no stderr", kind), `remove "ready"`)
	}
	if s.CLI != nil {
		p.checkCLI(name, s.CLI)
	}
}
