package deploy_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/deploy"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// clientFiles is, per client, its MCP config file below home (no variables
// set, on Linux) and a file of the user's own holding another server.
var clientFiles = map[string]struct{ path, mine string }{
	"claude":         {".claude.json", `{"numStartups": 7, "mcpServers": {"theirs": {"type": "stdio", "command": "x"}}, "tip": "<a&b>"}`},
	"cursor":         {".cursor/mcp.json", `{"mcpServers": {"theirs": {"command": "x", "args": []}}}`},
	"vscode":         {".config/Code/User/mcp.json", `{"inputs": [], "servers": {"theirs": {"type": "stdio", "command": "x"}}}`},
	"claude-desktop": {".config/Claude/claude_desktop_config.json", `{"mcpServers": {"theirs": {"command": "x"}}, "globalShortcut": ""}`},
	"opencode":       {".config/opencode/opencode.json", `{"$schema": "https://opencode.ai/config.json", "mcp": {"theirs": {"type": "local", "command": ["x"]}}}`},
	"codex":          {".codex/config.toml", "# mine\nmodel = \"o3\"\n\n[mcp_servers.theirs]\ncommand = \"x\"\n"},
}

func noEnv(string) string { return "" }

// entryOf returns what the file at part's path holds for mcpx (nil:
// nothing) and checks the user's server is still there.
func entryOf(t *testing.T, name string, p deploy.Part) map[string]any {
	t.Helper()
	b, err := os.ReadFile(p.Path)
	if err != nil {
		t.Fatal(err)
	}
	if name == "codex" {
		if !strings.Contains(string(b), "[mcp_servers.theirs]\ncommand = \"x\"\n") || !strings.HasPrefix(string(b), "# mine\n") {
			t.Fatalf("the user's config.toml lost its own:\n%s", b)
		}
		_, table, ok := strings.Cut(string(b), "[mcp_servers.mcpx]\n")
		if !ok {
			return nil
		}
		return map[string]any{"toml": table}
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s is no JSON: %v\n%s", p.Path, err, b)
	}
	keys := strings.Split(p.Name, ".")
	parent, _ := doc[keys[0]].(map[string]any)
	if _, ok := parent["theirs"]; !ok {
		t.Fatalf("the user's server is gone from %s:\n%s", p.Path, b)
	}
	e, _ := parent[keys[1]].(map[string]any)
	return e
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

// TestMCPEntryLifecycle, for every client: the entry goes into the user's
// own config beside their servers; a second install is a no-op; our
// unedited entry follows a new form (and a token narrows the file to
// 0600); an edited entry is reported and left, by install and by
// uninstall; uninstall takes out only ours.
func TestMCPEntryLifecycle(t *testing.T) {
	stdio := deploy.Server{}
	web := deploy.Server{URL: "http://127.0.0.1:4000/mcp", Headers: map[string]string{"Authorization": "Bearer tok123"}}
	for _, h := range deploy.Harnesses() {
		t.Run(h.Name, func(t *testing.T) {
			home, state := t.TempDir(), t.TempDir()
			env := func(s deploy.Server) deploy.Env {
				return deploy.Env{Home: home, Getenv: noEnv, Binary: "/opt/bin/mcpx", MCP: s, OS: "linux"}
			}
			part := func(s deploy.Server) []deploy.Part { return []deploy.Part{h.Entry(env(s))} }
			f := clientFiles[h.Name]
			path := filepath.Join(home, filepath.FromSlash(f.path))
			if p := part(stdio)[0].Path; p != path {
				t.Fatalf("the entry goes to %s, want %s", p, path)
			}
			os.MkdirAll(filepath.Dir(path), 0o755)
			testenv.WriteFile(t, path, f.mine) // 0644

			if got := actions(install(t, state, part(stdio), false)); got[0] != deploy.Create {
				t.Fatalf("install: %v", got)
			}
			e := entryOf(t, h.Name, part(stdio)[0])
			if e == nil || !strings.Contains(mustJSON(e), "/opt/bin/mcpx") || !strings.Contains(mustJSON(e), `mcp`) {
				t.Fatalf("the entry is %v", e)
			}
			if h.Name == "claude" {
				b, _ := os.ReadFile(path)
				if !strings.Contains(string(b), `"tip": "<a&b>"`) || !strings.HasPrefix(string(b), "{\n  \"numStartups\": 7,") {
					t.Errorf("the user's members changed (order, escaping):\n%s", b)
				}
			}
			if m := mode(t, path); m != 0o644 {
				t.Errorf("a stdio entry changed the file's mode to %o", m)
			}
			if got := actions(install(t, state, part(stdio), false)); got[0] != deploy.Unchanged {
				t.Fatalf("second install: %v", got)
			}

			form := web
			if h.StdioOnly {
				form = deploy.Server{Args: []string{"mcp", "--broker", "sandbox"}}
			}
			if got := actions(install(t, state, part(form), false)); got[0] != deploy.Update {
				t.Fatalf("install of another form over our entry: %v", got)
			}
			e = entryOf(t, h.Name, part(form)[0])
			switch {
			case h.StdioOnly:
				if !strings.Contains(mustJSON(e), "sandbox") {
					t.Fatalf("the entry is %v", e)
				}
			case !strings.Contains(mustJSON(e), "http://127.0.0.1:4000/mcp") || !strings.Contains(mustJSON(e), "Bearer tok123"):
				t.Fatalf("the HTTP entry is %v", e)
			default:
				if m := mode(t, path); m != 0o600 {
					t.Errorf("the file holding a token is mode %o, want 600", m)
				}
			}

			// The user edits our entry: it is theirs now.
			b, _ := os.ReadFile(path)
			testenv.WriteFile(t, path, strings.NewReplacer("127.0.0.1:4000", "127.0.0.1:4001", "sandbox", "other").Replace(string(b)))
			edited, _ := os.ReadFile(path)
			rs := install(t, state, part(stdio), false)
			if rs[0].Action != deploy.Edited || rs[0].Diff == "" {
				t.Fatalf("install over an edited entry: %v", rs[0].Action)
			}
			if after, _ := os.ReadFile(path); string(after) != string(edited) {
				t.Fatalf("install overwrote the user's edit:\n%s", after)
			}
			if got := actions(uninstall(t, state, part(stdio))); got[0] != deploy.Edited {
				t.Fatalf("uninstall of an edited entry: %v", got)
			}
			if after, _ := os.ReadFile(path); string(after) != string(edited) {
				t.Fatalf("uninstall removed the user's edit:\n%s", after)
			}

			// Back as we wrote it: uninstall takes it out, theirs stays.
			testenv.WriteFile(t, path, string(b))
			if got := actions(uninstall(t, state, part(stdio))); got[0] != deploy.Remove {
				t.Fatalf("uninstall: %v", got)
			}
			if e := entryOf(t, h.Name, part(stdio)[0]); e != nil {
				t.Fatalf("uninstall left %v", e)
			}
			if got := actions(uninstall(t, state, part(stdio))); got[0] != deploy.Absent {
				t.Fatalf("second uninstall: %v", got)
			}
		})
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestMCPEntryNewFile: a config file mcpx creates is 0600, in either form.
func TestMCPEntryNewFile(t *testing.T) {
	for _, h := range deploy.Harnesses() {
		home, state := t.TempDir(), t.TempDir()
		p := h.Entry(deploy.Env{Home: home, Getenv: noEnv, Binary: "/b/mcpx", OS: "linux"})
		install(t, state, []deploy.Part{p}, false)
		if m := mode(t, p.Path); m != 0o600 {
			t.Errorf("%s: a new %s is mode %o, want 600", h.Name, p.Path, m)
		}
	}
}

// TestMCPEntryPaths: the variables that move a client's config, and macOS's
// Application Support.
func TestMCPEntryPaths(t *testing.T) {
	getenv := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	for _, tc := range []struct {
		client, os string
		vars       map[string]string
		want       string
	}{
		{"claude", "linux", map[string]string{"CLAUDE_CONFIG_DIR": "/cc"}, "/cc/.claude.json"},
		{"codex", "linux", map[string]string{"CODEX_HOME": "/cx"}, "/cx/config.toml"},
		{"opencode", "linux", map[string]string{"XDG_CONFIG_HOME": "/xdg"}, "/xdg/opencode/opencode.json"},
		{"vscode", "linux", map[string]string{"XDG_CONFIG_HOME": "/xdg"}, "/xdg/Code/User/mcp.json"},
		{"vscode", "darwin", nil, "/h/Library/Application Support/Code/User/mcp.json"},
		{"claude-desktop", "darwin", nil, "/h/Library/Application Support/Claude/claude_desktop_config.json"},
		{"cursor", "darwin", nil, "/h/.cursor/mcp.json"},
	} {
		h, _ := deploy.LookupHarness(tc.client)
		if got := h.Entry(deploy.Env{Home: "/h", Getenv: getenv(tc.vars), Binary: "/b", OS: tc.os}).Path; got != tc.want {
			t.Errorf("%s on %s with %v: %s, want %s", tc.client, tc.os, tc.vars, got, tc.want)
		}
	}
}

// TestMCPEntryRefuses: a file mcpx cannot edit safely is an error, and
// nothing is written.
func TestMCPEntryRefuses(t *testing.T) {
	claude, _ := deploy.LookupHarness("claude")
	codex, _ := deploy.LookupHarness("codex")
	for _, tc := range []struct {
		h          deploy.Harness
		file, want string
	}{
		{claude, "{\n  // a comment\n}", `not plain JSON (invalid JSON: invalid character '/'): mcpx edits only plain JSON; add the entry yourself as mcpServers.mcpx: {"type":"stdio","command":"/b/mcpx","args":["mcp"]}`},
		{claude, `{"mcpServers": []}`, `"mcpServers" is not an object`},
		{claude, `[1]`, "not a JSON object"},
		{codex, "mcp_servers.mcpx.command = \"x\"\n", "other than as a [mcp_servers.mcpx] table"},
		{codex, "[mcp_servers]\nmcpx = { command = \"x\" }\n", "other than as a [mcp_servers.mcpx] table"},
		{codex, "[mcp_servers.mcpx]\ncommand = \"a\"\n[mcp_servers.mcpx]\ncommand = \"b\"\n", "two [mcp_servers.mcpx] tables"},
	} {
		home, state := t.TempDir(), t.TempDir()
		p := tc.h.Entry(deploy.Env{Home: home, Getenv: noEnv, Binary: "/b/mcpx"})
		os.MkdirAll(filepath.Dir(p.Path), 0o755)
		testenv.WriteFile(t, p.Path, tc.file)
		rec, _ := deploy.LoadRecords(state)
		if _, err := rec.Install([]deploy.Part{p}, false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("install into %q: %v, want %q", tc.file, err, tc.want)
		}
		if b, _ := os.ReadFile(p.Path); string(b) != tc.file {
			t.Errorf("a refused install changed the file:\n%s", b)
		}
	}
}

// TestTOMLTable: our table among the user's, with its subtables, is found,
// replaced and removed whole; their comments and tables stay.
func TestTOMLTable(t *testing.T) {
	codex, _ := deploy.LookupHarness("codex")
	home, state := t.TempDir(), t.TempDir()
	p := codex.Entry(deploy.Env{Home: home, Getenv: noEnv, Binary: "/b/mcpx"})
	os.MkdirAll(filepath.Dir(p.Path), 0o755)
	// As mcpx wrote it once, with the user's tables around it: in the
	// middle, followed by a comment of theirs.
	mine := "model = \"o3\"\n\n" + p.Want + "\n# theirs\n[mcp_servers.theirs]\ncommand = \"x\"\n"
	testenv.WriteFile(t, p.Path, mine)
	if got := actions(install(t, state, []deploy.Part{p}, false)); got[0] != deploy.Unchanged {
		t.Fatalf("install over our own table: %v", got)
	}
	// Last in a file without its final newline: still ours, unchanged.
	testenv.WriteFile(t, p.Path, "model = \"o3\"\n\n"+strings.TrimSuffix(p.Want, "\n"))
	if got := actions(install(t, state, []deploy.Part{p}, false)); got[0] != deploy.Unchanged {
		t.Fatalf("install over our own table at the end, no newline: %v", got)
	}
	testenv.WriteFile(t, p.Path, mine)
	web := codex.Entry(deploy.Env{Home: home, Getenv: noEnv, Binary: "/b/mcpx",
		MCP: deploy.Server{URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer t\"q"}}})
	install(t, state, []deploy.Part{web}, false)
	b, _ := os.ReadFile(p.Path)
	want := "model = \"o3\"\n\n[mcp_servers.mcpx]\nurl = \"http://127.0.0.1:1/mcp\"\nhttp_headers = { \"Authorization\" = \"Bearer t\\\"q\" }\n\n# theirs\n[mcp_servers.theirs]\ncommand = \"x\"\n"
	if string(b) != want {
		t.Fatalf("after the update:\n%s\nwant:\n%s", b, want)
	}
	// A subtable the user added is part of our table: an edit.
	testenv.WriteFile(t, p.Path, strings.Replace(want, "\n\n# theirs", "\n[mcp_servers.mcpx.env]\nA = \"1\"\n\n# theirs", 1))
	if rs := install(t, state, []deploy.Part{web}, false); rs[0].Action != deploy.Edited || !strings.Contains(rs[0].Diff, "+ A = \"1\"") {
		t.Fatalf("install over a table with the user's subtable: %v\n%s", rs[0].Action, rs[0].Diff)
	}
	testenv.WriteFile(t, p.Path, want)
	uninstall(t, state, []deploy.Part{web})
	if b, _ := os.ReadFile(p.Path); string(b) != "model = \"o3\"\n\n# theirs\n[mcp_servers.theirs]\ncommand = \"x\"\n" {
		t.Fatalf("after uninstall:\n%s", b)
	}
}

// TestShownHidesTokens: what install prints never holds the token.
func TestShownHidesTokens(t *testing.T) {
	h, _ := deploy.LookupHarness("cursor")
	p := h.Entry(deploy.Env{Home: "/h", Getenv: noEnv, Binary: "/b",
		MCP: deploy.Server{URL: "http://x/mcp", Headers: map[string]string{"Authorization": "Bearer abc.def"}}})
	if got := p.Shown(p.Want); strings.Contains(got, "abc.def") || !strings.Contains(got, `"Bearer <secret>"`) {
		t.Errorf("shown:\n%s", got)
	}
	if got := p.Shown(`http_headers = { "Authorization" = "Bearer zzz" }`); strings.Contains(got, "zzz") {
		t.Errorf("another token shown: %s", got)
	}
}
