package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"mcpx.dev/mcpx/auth/owner"
	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/deploy"
	"mcpx.dev/mcpx/wire"
)

// installCmd is `mcpx install <client> [--http] [--broker B] [--dry-run]`
// and `mcpx install --list`: the MCP server entry called mcpx in a
// client's config, and for an agent harness its instructions section and
// session hook (package deploy).
func installCmd(_ context.Context, c *cli, args []string) int {
	fs := newFlags(c, "install")
	dry := fs.Bool("dry-run", false, "print what would be written, change nothing")
	list := fs.Bool("list", false, "list the clients and what install writes for each")
	asJSON := fs.Bool("json", false, "with --list: print the list as JSON")
	uninstall := fs.Bool("uninstall", false, "remove what install wrote (parts you edited are reported and left)")
	httpForm := fs.Bool("http", false, "write a Streamable HTTP entry (the running daemon's loopback URL and token, or --broker's /mcp) rather than the stdio bridge, mcpx mcp")
	bo := brokerFlag(fs) // passed on to `mcpx mcp`, or with --http where the URL points
	binary := fs.String("binary", "", "the mcpx binary the hooks and the stdio bridge run (default this one)")
	stateFlag := fs.String("state-dir", "", "where the hashes of what was written are kept, and the daemon record --http reads (default $XDG_STATE_HOME/mcpx)")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if *list {
		return printHarnesses(c, *asJSON)
	}
	if len(pos) != 1 {
		return usageError(c, fs, "name one client (or --list)")
	}
	h, err := deploy.LookupHarness(pos[0])
	if err != nil {
		return usageError(c, fs, "%v", err)
	}
	if h.StdioOnly && *httpForm {
		return usageError(c, fs, "%s takes only command entries: leave out --http (the stdio bridge `mcpx mcp` reaches the same broker)", h.Name)
	}
	home := c.getenv("HOME")
	if !filepath.IsAbs(home) {
		fmt.Fprintln(c.stderr, "mcpx install: $HOME is not an absolute path")
		return exitFailed
	}
	bin := *binary
	if bin == "" {
		if bin, err = deploy.Executable(!*uninstall); err != nil {
			fmt.Fprintf(c.stderr, "mcpx install: %v\n", err)
			return exitFailed
		}
	}
	state := *stateFlag
	if state == "" {
		if state, err = stateDir(c.getenv); err != nil {
			fmt.Fprintf(c.stderr, "mcpx install: %v\n", err)
			return exitFailed
		}
	}
	e := deploy.Env{Home: home, Getenv: c.getenv, Binary: bin}
	var notes []string
	tok := &pendingToken{state: state, name: h.Name, dry: *dry}
	if !*uninstall { // uninstall finds our entry by its recorded hash, whatever its form
		if e.MCP, notes, err = mcpServer(c, bo, *httpForm, state, tok); err != nil {
			fmt.Fprintf(c.stderr, "mcpx install %s: %v\n", h.Name, err)
			return exitFailed
		}
	}
	rec, err := deploy.LoadRecords(state)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx install: %v\n", err)
		return exitFailed
	}
	apply := rec.Install
	if *uninstall {
		apply = rec.Uninstall
	}
	results, err := apply(h.Parts(e), *dry)
	if terr := tok.settle(err == nil && !slices.ContainsFunc(results, func(r deploy.Result) bool { return r.Action == deploy.Edited })); terr != nil && err == nil {
		err = terr
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx install %s: %v\n", h.Name, err)
		return exitFailed
	}
	if *uninstall && !*dry {
		for _, n := range revokeInstalled(state, h.Name) {
			fmt.Fprintln(c.stdout, n)
		}
	}
	return printResults(c, results, append(notes, h.Notes(e)...), *dry, *uninstall)
}

// mcpServer is the MCP entry's form for install's flags
// (deploy.ServerFor), with notes for the user.
// An HTTP entry of the local daemon gets an owner token of its own
// (pendingToken).
func mcpServer(c *cli, bo *brokerOpts, httpForm bool, state string, tok *pendingToken) (deploy.Server, []string, error) {
	if bo.remote != "" { // the entry names the saved remote's broker itself
		if err := bo.resolve(c); err != nil {
			return deploy.Server{}, nil, err
		}
	}
	_, tailnet := client.BrokerAddr(bo.addr)
	return deploy.ServerFor(deploy.ServerOptions{HTTP: httpForm, Broker: bo.addr, Tailnet: bo.addr != "" && tailnet, TSNet: bo.tsnet, TokenFile: bo.tokenFile,
		Token: func() (string, error) { return brokerToken(c, bo.tokenFile) },
		Daemon: func() (deploy.Daemon, error) {
			rec, err := client.ReadRecord(state)
			if err != nil {
				return deploy.Daemon{}, err
			}
			return deploy.Daemon{Pid: rec.Pid, URL: rec.URL, Socket: rec.Socket, Answers: rec.URL != "" && client.Answers(rec.Socket)}, nil
		},
		OwnerToken: tok.make,
		StateDir:   state})
}

// pendingToken is the owner token an --http entry of the local daemon
// carries (package auth/owner), named after the client. Its secret goes
// into the client's config and nowhere else (never an argv). It is made
// under a name of its own and takes the client's name, replacing the
// token an earlier install made, only once the entry is written (settle):
// an entry left as it is (edited) keeps working. A dry run makes none.
type pendingToken struct {
	state, name string
	dry         bool
	made        string // the temporary name; "" = none made
}

func (p *pendingToken) make() (string, error) {
	if p.dry {
		return "<a new owner token named " + p.name + ">", nil
	}
	p.made = p.name + ".pending"
	secret, _, err := owner.Open(filepath.Join(p.state, "auth")).Add(p.made)
	if err != nil {
		p.made = ""
	}
	return secret, err
}

// settle gives the made token the client's name if the entry was written
// (ok), and revokes it otherwise.
func (p *pendingToken) settle(ok bool) error {
	if p.made == "" {
		return nil
	}
	ts := owner.Open(filepath.Join(p.state, "auth"))
	if !ok {
		_, err := ts.Revoke(p.made)
		return err
	}
	return ts.Rename(p.made, p.name)
}

// revokeInstalled revokes the owner token an --http install made for the
// client name, if there is one, and says so.
func revokeInstalled(state, name string) []string {
	ts := owner.Open(filepath.Join(state, "auth"))
	if has, err := ts.Has(name); err != nil || !has {
		return nil
	}
	if _, err := ts.Revoke(name); err != nil {
		return []string{fmt.Sprintf("the owner token %s stays: %v", name, err)}
	}
	return []string{fmt.Sprintf("revoked the owner token %s (`mcpx install %s --http` made it)", name, name)}
}

// printHarnesses is `mcpx install --list`: each client, its files, and the
// entry it gets in either form.
func printHarnesses(c *cli, asJSON bool) int {
	home := c.getenv("HOME")
	if !filepath.IsAbs(home) {
		home = "~"
	}
	stdio := deploy.Env{Home: home, Getenv: c.getenv, Binary: "/path/to/mcpx"}
	httpEnv := stdio
	httpEnv.MCP = deploy.Server{URL: "http://127.0.0.1:PORT/mcp", Headers: map[string]string{wire.HeaderAuthorization: "Bearer <token>"}}
	type harness struct {
		Name    string   `json:"name"`
		Summary string   `json:"summary"`
		Files   []string `json:"files"`
		Stdio   string   `json:"stdio"`          // the entry of the stdio bridge
		HTTP    string   `json:"http,omitempty"` // the entry of --http; absent: stdio only
	}
	var hs []harness
	for _, h := range deploy.Harnesses() {
		x := harness{Name: h.Name, Summary: h.Summary, Files: []string{}, Stdio: compactEntry(h.Entry(stdio))}
		for _, p := range h.Parts(stdio) {
			x.Files = append(x.Files, p.String())
		}
		if !h.StdioOnly {
			x.HTTP = compactEntry(h.Entry(httpEnv))
		}
		hs = append(hs, x)
	}
	if asJSON {
		b, _ := json.MarshalIndent(struct {
			Harnesses      []harness `json:"harnesses"`
			MCPServerEntry bool      `json:"mcpServerEntry"`
		}{hs, true}, "", "  ")
		fmt.Fprintf(c.stdout, "%s\n", b)
		return exitOK
	}
	for i, h := range hs {
		if i > 0 {
			fmt.Fprintln(c.stdout)
		}
		fmt.Fprintf(c.stdout, "%s  %s\n", h.Name, h.Summary)
		for _, f := range h.Files {
			fmt.Fprintf(c.stdout, "    writes %s\n", f)
		}
		fmt.Fprintf(c.stdout, "    entry (default, the stdio bridge): %s\n", h.Stdio)
		if h.HTTP != "" {
			fmt.Fprintf(c.stdout, "    entry with --http: %s\n", h.HTTP)
		}
	}
	return exitOK
}

// compactEntry is an entry on one line: JSON compacted, TOML lines joined.
func compactEntry(p deploy.Part) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(p.Want)) == nil {
		return b.String()
	}
	return strings.Join(strings.Split(strings.TrimSpace(p.Want), "\n"), "; ")
}

func printResults(c *cli, results []deploy.Result, notes []string, dry, uninstall bool) int {
	edited := 0
	for _, r := range results {
		switch {
		case r.Action == deploy.Edited:
			edited++
			fmt.Fprintf(c.stderr, "left as it is: %s was edited (or not written by mcpx). Difference (- mcpx's, + the file):\n%s", r.Part, indent(r.Part.Shown(r.Diff)))
		case dry && (r.Action == deploy.Create || r.Action == deploy.Update) && r.Part.ShowFile:
			// The fragment alone says little: show the file as it would be.
			fmt.Fprintf(c.stdout, "would %s %s; the file would be:\n%s", r.Action, r.Part, indent(r.Part.Shown(r.File)))
		case dry && (r.Action == deploy.Create || r.Action == deploy.Update):
			fmt.Fprintf(c.stdout, "would %s %s:\n%s", r.Action, r.Part, indent(r.Part.Shown(r.Part.Want)))
		case dry && r.Action == deploy.Remove:
			fmt.Fprintf(c.stdout, "would remove %s\n", r.Part)
		case r.Part.Private && (r.Action == deploy.Create || r.Action == deploy.Update):
			fmt.Fprintf(c.stdout, "%s %s (file mode 0600: it holds a token)\n", r.Action, r.Part)
		default:
			fmt.Fprintf(c.stdout, "%s %s\n", r.Action, r.Part)
		}
	}
	if !uninstall {
		for _, n := range notes {
			fmt.Fprintf(c.stdout, "note: %s\n", n)
		}
	}
	if edited > 0 {
		return exitToolError // refused, as a config with errors is
	}
	return exitOK
}

// hookCmd is `mcpx hook claude|codex`: the SessionStart hook `mcpx install`
// registers. It reads the hook's JSON input on stdin (its session_id) and
//   - claude: appends `export MCPX_SESSION_ID=…` to $CLAUDE_ENV_FILE, which
//     Claude Code sources before each Bash tool command;
//   - codex: prints the session id as additionalContext for the agent (codex
//     has no way to set a hook's variables in the agent's shell).
//
// MCPX_PARENT_SESSION_ID is the MCPX_SESSION_ID the harness itself was
// started with, if any. A hook never fails the session: problems go to
// stderr, the exit status is 0.
func hookCmd(_ context.Context, c *cli, args []string) int {
	fs := newFlags(c, "hook")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 || (pos[0] != "claude" && pos[0] != "codex") {
		return usageError(c, fs, "want claude or codex")
	}
	var in struct {
		SessionID string `json:"session_id"`
	}
	if err := json.NewDecoder(io.LimitReader(c.stdin, 1<<20)).Decode(&in); err != nil || in.SessionID == "" {
		fmt.Fprintf(c.stderr, "mcpx hook: no session_id in the hook's input (%v): MCPX_SESSION_ID not set\n", err)
		return exitOK
	}
	parent := c.getenv("MCPX_SESSION_ID")
	if parent == in.SessionID {
		parent = c.getenv("MCPX_PARENT_SESSION_ID")
	}
	if pos[0] == "codex" {
		text := fmt.Sprintf("mcpx: this session's id is %s. Run mcpx as `MCPX_SESSION_ID=%s mcpx ...` (or pass --session %s) so that session-scoped servers are this session's.", in.SessionID, in.SessionID, in.SessionID)
		if parent != "" {
			text += fmt.Sprintf(" Also set MCPX_PARENT_SESSION_ID=%s.", parent)
		}
		out := map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "SessionStart", "additionalContext": text}}
		json.NewEncoder(c.stdout).Encode(out) //nolint:errcheck // nothing to do about a closed stdout
		return exitOK
	}
	envFile := c.getenv("CLAUDE_ENV_FILE")
	if !filepath.IsAbs(envFile) {
		fmt.Fprintln(c.stderr, "mcpx hook: $CLAUDE_ENV_FILE is not set (Claude Code sets it for SessionStart hooks): MCPX_SESSION_ID not set")
		return exitOK
	}
	lines := deploy.ShellExport("MCPX_SESSION_ID", in.SessionID)
	if parent != "" {
		lines += deploy.ShellExport("MCPX_PARENT_SESSION_ID", parent)
	}
	f, err := os.OpenFile(envFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err == nil {
		_, err = f.WriteString(lines)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx hook: writing %s: %v\n", envFile, err)
	}
	return exitOK
}

// setupPromptCmd prints the setup text for an agent: what mcpx is, and the
// steps to set it up here, as commands the agent runs and checks.
func setupPromptCmd(_ context.Context, c *cli, args []string) int {
	fs := newFlags(c, "setup-prompt")
	if _, code, ok := parseFlags(fs, args); !ok {
		return code
	}
	var names []string
	for _, h := range deploy.Harnesses() {
		names = append(names, h.Name)
	}
	fmt.Fprintf(c.stdout, setupPrompt, strings.Join(names, "|"))
	return exitOK
}

const setupPrompt = `You are setting up mcpx on this machine for the user. mcpx is one daemon
that brokers MCP servers: it starts each server for the directory and session
that calls it, and your harness reaches all their tools as one MCP server,
mcpx, instead of loading each MCP server itself.

Do these steps in order. Run each command, read its output, and stop to ask
the user when a step reports a problem you cannot fix from its message.

1. Check the installation: run ` + "`mcpx doctor`" + `. It checks the config, the state
   directory, the daemon's socket, the tailnet and each configured server, and
   prints each problem with its fix. Fix what it reports (the config lives at
   ` + "`mcpx daemon info`" + `'s config path; ` + "`mcpx config check`" + ` validates it) and run it
   again until it exits 0.
2. Run the daemon as a user service: ` + "`mcpx service install --dry-run`" + ` shows the
   unit and the commands; show them to the user, then run
   ` + "`mcpx service install`" + `. ` + "`mcpx service status`" + ` says whether it is enabled and
   running and where its logs are. If it reports a file the user edited, do
   not remove it: show the user the difference.
3. Wire up the harness you run in: ` + "`mcpx install --list`" + ` names them;
   run ` + "`mcpx install <%s> --dry-run`" + `, then without --dry-run. It writes
   the MCP server entry mcpx (the stdio bridge ` + "`mcpx mcp`" + `) and, for an
   agent harness, an instructions section (once) and a session hook. Follow
   any "note:" it prints; a part reported as edited is the user's: leave
   it. The harness sees the new server when it next starts.
4. Check: ` + "`mcpx catalog`" + ` lists the servers and their tools, and
   ` + "`mcpx call demo.echo '{\"message\":\"hi\"}'`" + ` (with no config, the built-in demo
   server) answers.

Never run these with sudo: the daemon and its servers run as the user.
`
