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

// Harness is an agent harness `mcpx install` sets up: the instructions
// section in its global instructions file, and its hook or plugin that gives
// every shell it starts the session identity (MCPX_SESSION_ID, and
// MCPX_PARENT_SESSION_ID when the harness itself runs inside an mcpx
// session). No MCP server entry yet: mcpx does not serve MCP.
type Harness struct {
	Name    string
	Summary string
	parts   func(e Env) []Part
	notes   func(e Env) []string
}

// Env is where a harness keeps its files: the user's home and the
// variables that move them, and the mcpx binary the hooks run.
type Env struct {
	Home   string              // absolute
	Getenv func(string) string // os.Getenv, or a test's
	Binary string              // the mcpx binary hooks run (absolute)
}

func (e Env) dir(envVar string, homeRel ...string) string {
	if d := e.Getenv(envVar); filepath.IsAbs(d) {
		return d
	}
	return filepath.Join(append([]string{e.Home}, homeRel...)...)
}

// Parts returns what installing h writes.
func (h Harness) Parts(e Env) []Part { return h.parts(e) }

// Notes returns what installing h cannot do itself and the user must (or
// nothing).
func (h Harness) Notes(e Env) []string {
	if h.notes == nil {
		return nil
	}
	return h.notes(e)
}

// Harnesses returns the harnesses mcpx installs into, by name.
func Harnesses() []Harness {
	return []Harness{
		{
			Name:    "claude",
			Summary: "Claude Code: a section in ~/.claude/CLAUDE.md; a SessionStart hook in ~/.claude/settings.json exporting the session through $CLAUDE_ENV_FILE",
			parts: func(e Env) []Part {
				dir := e.dir("CLAUDE_CONFIG_DIR", ".claude")
				return []Part{
					Instructions(filepath.Join(dir, "CLAUDE.md"), sessionExported),
					SessionStartHook(filepath.Join(dir, "settings.json"), e.Binary, "claude"),
				}
			},
		},
		{
			Name:    "codex",
			Summary: "Codex CLI: a section in ~/.codex/AGENTS.md; a SessionStart hook in ~/.codex/hooks.json telling the agent its session id",
			parts: func(e Env) []Part {
				dir := e.dir("CODEX_HOME", ".codex")
				return []Part{
					Instructions(filepath.Join(dir, "AGENTS.md"), sessionTold),
					SessionStartHook(filepath.Join(dir, "hooks.json"), e.Binary, "codex"),
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
				return []string{fmt.Sprintf("codex runs hooks only with the feature on: add\n\n    [features]\n    codex_hooks = true\n\n  to %s (mcpx does not edit it), then trust the hook in codex's /hooks", cfg)}
			},
		},
		{
			Name:    "opencode",
			Summary: "opencode: a section in ~/.config/opencode/AGENTS.md; a plugin ~/.config/opencode/plugins/mcpx.js setting the session in every shell (shell.env)",
			parts: func(e Env) []Part {
				dir := filepath.Join(e.dir("XDG_CONFIG_HOME", ".config"), "opencode")
				return []Part{
					Instructions(filepath.Join(dir, "AGENTS.md"), sessionExportedPlugin),
					{Path: filepath.Join(dir, "plugins", "mcpx.js"), Want: opencodePlugin},
				}
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
// harness's hook does for the session id.
const instructionsFormat = beginMarker + `
## MCP tools through mcpx

MCP servers are reached through the mcpx broker from the shell, not as
tools of this harness. The broker starts each server for the directory and
session you call from: run mcpx from the project you work in.

- ` + "`mcpx catalog`" + `: every server with its tool count, then tool signatures
  within a token budget (` + "`--budget N`" + `). Start here.
- ` + "`mcpx search <terms>`" + `: find tools by name, tag, server and description.
- ` + "`mcpx types <server>[.<tool>]`" + `: a tool's TypeScript signature, with the
  server's instructions.
- ` + "`mcpx call <server>.<tool> '<json args>'`" + `: call one tool; its result's
  text is printed (` + "`--json`" + `: the whole CallToolResult as JSON). Exit codes:
  1 the tool returned an error, 3 the broker is unreachable, 4 the call failed.
- ` + "`mcpx run <script> [args]`" + `: run a TypeScript script that imports the typed
  client (` + "`import { ... } from \"mcpx\"`" + `) and calls many tools in one go;
  prefer it to many single calls.

%s
Run ` + "`mcpx help`" + ` for the rest.
` + endMarker + "\n"

// What the instructions say about the session, true of each harness's hook
// (real-use 25): Claude Code's hook and opencode's plugin set the variable
// in every shell; codex's hook can only tell the agent its id.
const (
	sessionExported = `The hook mcpx installed sets your session id in the MCPX_SESSION_ID
variable of every shell; mcpx sends it, so session-scoped servers are yours.`
	sessionExportedPlugin = `The plugin mcpx installed sets your session id in the MCPX_SESSION_ID
variable of every shell; mcpx sends it, so session-scoped servers are yours.`
	sessionTold = `The hook mcpx installed tells you your session id when the session
starts; it cannot set variables in your shells. Run mcpx as
` + "`MCPX_SESSION_ID=<id> mcpx ...`" + ` (or pass ` + "`--session <id>`" + `) so that
session-scoped servers are yours: without it each of their calls gets a new
server that keeps nothing.`
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
		Path: path, Name: "SessionStart hook", Want: string(want) + "\n",
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
