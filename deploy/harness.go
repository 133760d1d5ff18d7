package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Harness is an MCP client `mcpx install` wires to mcpx: the entry called
// mcpx in its MCP config (the stdio bridge `mcpx mcp`, or Streamable HTTP),
// and for an agent harness the instructions section in its global
// instructions file and its hook or plugin that gives every shell it
// starts the session identity (MCPX_SESSION_ID, and MCPX_PARENT_SESSION_ID
// when the harness itself runs inside an mcpx session).
type Harness struct {
	Name    string
	Summary string
	// StdioOnly: the client's config file takes only command entries
	// (Claude Desktop), so it gets the stdio bridge whatever Env.MCP says.
	StdioOnly bool
	parts     func(e Env) []Part
	notes     func(e Env) []string
}

// Env is where a harness keeps its files: the user's home and the
// variables that move them, the mcpx binary the hooks and the stdio bridge
// run, and how the client reaches mcpx.
type Env struct {
	Home   string              // absolute
	Getenv func(string) string // os.Getenv, or a test's
	Binary string              // the mcpx binary hooks and the bridge run (absolute)
	MCP    Server              // the MCP entry's form (zero: the stdio bridge `mcpx mcp`)
	OS     string              // a runtime.GOOS value: where desktop apps keep their config ("" = this one)
}

func (e Env) dir(envVar string, homeRel ...string) string {
	if d := e.Getenv(envVar); filepath.IsAbs(d) {
		return d
	}
	return filepath.Join(append([]string{e.Home}, homeRel...)...)
}

// Parts returns what installing h writes.
func (h Harness) Parts(e Env) []Part {
	if h.StdioOnly {
		e.MCP = Server{Args: e.MCP.Args}
	}
	return h.parts(e)
}

// Entry returns h's MCP server entry among its Parts.
func (h Harness) Entry(e Env) Part {
	for _, p := range h.Parts(e) {
		if p.mcp {
			return p
		}
	}
	panic("deploy: harness " + h.Name + " has no MCP entry") // every harness has one
}

// Notes returns what installing h cannot do itself and the user must (or
// nothing).
func (h Harness) Notes(e Env) []string {
	if h.notes == nil {
		return nil
	}
	return h.notes(e)
}

// Harnesses returns the clients mcpx installs into, by name. Each gets one
// MCP server entry called mcpx; the agent harnesses among them (claude,
// codex, opencode) also the instructions section and the session hook.
// The config files and formats are as each client's own `mcp add` writes
// them (Claude Code 2.1.332, codex 0.171.0, opencode 1.18.33 checked
// here) or as its documentation gives them (Cursor, VS Code, Claude
// Desktop).
func Harnesses() []Harness {
	return []Harness{
		{
			Name:    "claude",
			Summary: "Claude Code: mcpServers.mcpx in ~/.claude.json (user scope); a section in ~/.claude/CLAUDE.md; a SessionStart hook in ~/.claude/settings.json exporting the session through $CLAUDE_ENV_FILE",
			parts: func(e Env) []Part {
				dir := e.dir("CLAUDE_CONFIG_DIR", ".claude")
				return []Part{
					Instructions(filepath.Join(dir, "CLAUDE.md"), sessionExported),
					SessionStartHook(filepath.Join(dir, "settings.json"), e.Binary, "claude"),
					MCPEntry(claudeJSON(e), []string{"mcpServers"}, typedEntry(e.Binary, e.MCP), e.MCP),
				}
			},
		},
		{
			Name:    "codex",
			Summary: "Codex CLI: [mcp_servers.mcpx] in ~/.codex/config.toml; a section in ~/.codex/AGENTS.md; a SessionStart hook in ~/.codex/hooks.json telling the agent its session id",
			parts: func(e Env) []Part {
				dir := e.dir("CODEX_HOME", ".codex")
				return []Part{
					Instructions(filepath.Join(dir, "AGENTS.md"), sessionTold),
					SessionStartHook(filepath.Join(dir, "hooks.json"), e.Binary, "codex"),
					TOMLTable(filepath.Join(dir, "config.toml"), codexTable(e.Binary, e.MCP), e.MCP),
				}
			},
			notes: func(e Env) []string {
				cfg := filepath.Join(e.dir("CODEX_HOME", ".codex"), "config.toml")
				b, _ := os.ReadFile(cfg)
				for line := range strings.Lines(string(b)) {
					if strings.ReplaceAll(strings.TrimSpace(line), " ", "") == "codex_hooks=true" {
						return nil
					}
				}
				return []string{fmt.Sprintf("codex runs hooks only with the feature on: add\n\n    [features]\n    codex_hooks = true\n\n  to %s (mcpx edits only its own [mcp_servers.mcpx] table there), then trust the hook in codex's /hooks", cfg)}
			},
		},
		{
			Name:    "opencode",
			Summary: "opencode: mcp.mcpx in ~/.config/opencode/opencode.json; a section in ~/.config/opencode/AGENTS.md; a plugin ~/.config/opencode/plugins/mcpx.js setting the session in every shell (shell.env)",
			parts: func(e Env) []Part {
				dir := filepath.Join(e.dir("XDG_CONFIG_HOME", ".config"), "opencode")
				return []Part{
					Instructions(filepath.Join(dir, "AGENTS.md"), sessionExportedPlugin),
					{Path: filepath.Join(dir, "plugins", "mcpx.js"), Want: opencodePlugin},
					MCPEntry(filepath.Join(dir, "opencode.json"), []string{"mcp"}, opencodeEntry(e.Binary, e.MCP), e.MCP),
				}
			},
		},
		{
			Name:    "cursor",
			Summary: "Cursor: mcpServers.mcpx in ~/.cursor/mcp.json (every project)",
			parts: func(e Env) []Part {
				return []Part{MCPEntry(filepath.Join(e.Home, ".cursor", "mcp.json"), []string{"mcpServers"}, plainEntry(e.Binary, e.MCP), e.MCP)}
			},
		},
		{
			Name:    "vscode",
			Summary: "VS Code: servers.mcpx in the user profile's mcp.json (~/.config/Code/User, on macOS ~/Library/Application Support/Code/User)",
			parts: func(e Env) []Part {
				return []Part{MCPEntry(vscodeMCP(e), []string{"servers"}, typedEntry(e.Binary, e.MCP), e.MCP)}
			},
		},
		{
			Name:      "claude-desktop",
			Summary:   "Claude Desktop: mcpServers.mcpx in claude_desktop_config.json (~/Library/Application Support/Claude on macOS, ~/.config/Claude elsewhere); the stdio bridge only",
			StdioOnly: true,
			parts: func(e Env) []Part {
				return []Part{MCPEntry(claudeDesktopConfig(e), []string{"mcpServers"}, plainEntry(e.Binary, e.MCP), e.MCP)}
			},
		},
	}
}

// LookupHarness returns the harness called name.
func LookupHarness(name string) (Harness, error) {
	var names []string
	for _, h := range Harnesses() {
		if h.Name == name {
			return h, nil
		}
		names = append(names, h.Name)
	}
	return Harness{}, fmt.Errorf("no harness %q: mcpx installs into %s", name, strings.Join(names, ", "))
}

// The marker lines around the instructions section. A file holds at most
// one section: a second install finds it and changes nothing.
const (
	beginMarker = "<!-- mcpx:begin -->"
	endMarker   = "<!-- mcpx:end -->"
)

// instructionsFormat is the instructions section; its %s is what the
// harness's hook does for the session id. Short: the tools describe
// themselves through MCP.
const instructionsFormat = beginMarker + `
## MCP tools through mcpx

mcpx brokers your MCP servers as one MCP server of this harness,
` + "`mcpx`" + `: their tools are your native MCP tools, named ` + "`<server>__<tool>`" + `.
mcpx starts each server for the project you work in (your first root, else
your directory); session-scoped ones live as long as your connection.

%s
` + "`mcpx status`" + ` lists the servers running for you; ` + "`mcpx run <script>`" + ` runs a
TypeScript script calling many tools in one go; ` + "`mcpx help`" + ` has the rest.
` + endMarker + "\n"

// What the instructions say about the session, true of each harness's hook
// (real-use 25): Claude Code's hook and opencode's plugin set the variable
// in every shell; codex's hook can only tell the agent its id.
const (
	sessionExported = `The hook mcpx installed sets your session id in the MCPX_SESSION_ID
variable of every shell, so mcpx commands you run there are your session's.`
	sessionExportedPlugin = `The plugin mcpx installed sets your session id in the MCPX_SESSION_ID
variable of every shell, so mcpx commands you run there are your session's.`
	sessionTold = `The hook mcpx installed tells you your session id when the session
starts; it cannot set variables in your shells. Run mcpx commands as
` + "`MCPX_SESSION_ID=<id> mcpx ...`" + ` (or pass ` + "`--session <id>`" + `) so that
they are your session's.`
)

// InstructionsText is the section mcpx puts in a harness's instructions
// file, markers included, with session, what the harness's hook does for
// the session id.
func InstructionsText(session string) string {
	return fmt.Sprintf(instructionsFormat, session)
}

// Instructions is the instructions section in the markdown file at path,
// saying session about the session id.
func Instructions(path, session string) Part {
	return Part{Path: path, Name: "instructions", Want: InstructionsText(session), get: getSection, put: putSection}
}

// section finds the marked section: its byte span, or -1.
func section(file []byte) (start, end int, err error) {
	s := string(file)
	start = strings.Index(s, beginMarker)
	if start < 0 {
		return -1, -1, nil
	}
	if strings.Count(s, beginMarker) > 1 {
		return 0, 0, errors.New("it holds two mcpx sections: remove one")
	}
	e := strings.Index(s[start:], endMarker)
	if e < 0 {
		return 0, 0, fmt.Errorf("its mcpx section has no end marker %s: add it or remove the section", endMarker)
	}
	end = start + e + len(endMarker)
	if end < len(s) && s[end] == '\n' {
		end++
	}
	return start, end, nil
}

func getSection(file []byte) (string, bool, error) {
	start, end, err := section(file)
	if err != nil || start < 0 {
		return "", false, err
	}
	return string(file[start:end]), true, nil
}

func putSection(file []byte, part string) ([]byte, error) {
	start, end, err := section(file)
	if err != nil {
		return nil, err
	}
	if start >= 0 {
		before := file[:start:start]
		if part == "" {
			// The blank line install put before the section goes with it.
			before = bytes.TrimSuffix(before, []byte("\n"))
			if !bytes.HasSuffix(before, []byte("\n")) && len(before) > 0 {
				before = append(before, '\n')
			}
		}
		return append(append(bytes.Clone(before), part...), file[end:]...), nil
	}
	if part == "" {
		return file, nil
	}
	out := bytes.Clone(file)
	if len(out) > 0 {
		out = append(bytes.TrimRight(out, "\n"), "\n\n"...)
	}
	return append(out, part...), nil
}

// SessionStartHook is the SessionStart hook entry running `mcpx hook
// <harness>` in the JSON hooks file at path (Claude Code's settings.json and
// codex's hooks.json share the shape {"hooks": {"SessionStart": [{"hooks":
// [{"type": "command", "command": ...}]}]}}). The user's other hooks and
// settings stay; the file is rewritten with sorted keys.
func SessionStartHook(path, binary, harness string) Part {
	cmd := shellQuote(binary) + " hook " + harness
	group := map[string]any{"hooks": []any{map[string]any{"type": "command", "command": cmd}}}
	want, _ := json.MarshalIndent(group, "", "  ") // a map of strings always marshals
	isOurs := func(g any) bool {
		m, _ := g.(map[string]any)
		hooks, _ := m["hooks"].([]any)
		for _, h := range hooks {
			hm, _ := h.(map[string]any)
			if c, _ := hm["command"].(string); strings.HasSuffix(c, " hook "+harness) && strings.Contains(c, "mcpx") {
				return true
			}
		}
		return false
	}
	return Part{
		Path: path, Name: "SessionStart hook", Want: string(want) + "\n", ShowFile: true,
		get: func(file []byte) (string, bool, error) {
			_, groups, err := hookGroups(file)
			if err != nil {
				return "", false, err
			}
			var found []any
			for _, g := range groups {
				if isOurs(g) {
					found = append(found, g)
				}
			}
			switch len(found) {
			case 0:
				return "", false, nil
			case 1:
				b, err := json.MarshalIndent(found[0], "", "  ")
				return string(b) + "\n", true, err
			}
			return "", false, fmt.Errorf("it holds %d SessionStart hooks running `mcpx hook %s`: remove all but one", len(found), harness)
		},
		put: func(file []byte, part string) ([]byte, error) {
			doc, groups, err := hookGroups(file)
			if err != nil {
				return nil, err
			}
			var kept []any
			for _, g := range groups {
				if !isOurs(g) {
					kept = append(kept, g)
				}
			}
			if part != "" {
				var g any
				if err := json.Unmarshal([]byte(part), &g); err != nil {
					return nil, err
				}
				kept = append(kept, g)
			}
			hooks, _ := doc["hooks"].(map[string]any)
			if hooks == nil {
				hooks = map[string]any{}
			}
			if len(kept) == 0 {
				delete(hooks, "SessionStart")
			} else {
				hooks["SessionStart"] = kept
			}
			if len(hooks) == 0 {
				delete(doc, "hooks")
			} else {
				doc["hooks"] = hooks
			}
			b, err := json.MarshalIndent(doc, "", "  ")
			return append(b, '\n'), err
		},
	}
}

// hookGroups parses a JSON hooks file (empty = {}) and returns it with its
// hooks.SessionStart groups.
func hookGroups(file []byte) (map[string]any, []any, error) {
	doc := map[string]any{}
	if len(bytes.TrimSpace(file)) > 0 {
		d := json.NewDecoder(bytes.NewReader(file))
		d.UseNumber() // keep the user's numbers as written
		if err := d.Decode(&doc); err != nil {
			return nil, nil, fmt.Errorf("it is not a JSON object: %w", err)
		}
	}
	hooks, ok := doc["hooks"].(map[string]any)
	if !ok && doc["hooks"] != nil {
		return nil, nil, errors.New(`its "hooks" is not an object`)
	}
	groups, ok := hooks["SessionStart"].([]any)
	if !ok && hooks["SessionStart"] != nil {
		return nil, nil, errors.New(`its "hooks.SessionStart" is not an array`)
	}
	return doc, groups, nil
}

// shellQuote quotes s for sh: as is if it needs no quoting, else in single
// quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:@,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ShellExport is an `export NAME='value'` line for sh.
func ShellExport(name, value string) string {
	return "export " + name + "=" + shellQuote(value) + "\n"
}

// opencodePlugin gives every shell opencode starts (the bash tool, !cmd,
// terminals) the opencode session id through its shell.env hook.
const opencodePlugin = `// mcpx session identity for opencode, written by ` + "`mcpx install opencode`" + `.
// Every shell opencode starts (the bash tool, !commands, terminals) gets the
// opencode session as MCPX_SESSION_ID, and the mcpx session opencode itself
// runs in, if any, as MCPX_PARENT_SESSION_ID. Edit it and mcpx leaves it alone.
export const McpxSession = async () => {
  const parent = process.env.MCPX_SESSION_ID;
  return {
    "shell.env": async (input, output) => {
      if (!input.sessionID) return;
      output.env.MCPX_SESSION_ID = input.sessionID;
      if (parent && parent !== input.sessionID) output.env.MCPX_PARENT_SESSION_ID = parent;
    },
  };
};
`
