package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"mcpx.dev/mcpx/deploy"
)

// installCmd is `mcpx install <harness> [--dry-run]` and `mcpx install
// --list`: the instructions section and the session hook of an agent
// harness (package deploy).
func installCmd(_ context.Context, c *cli, args []string) int {
	fs := newFlags(c, "install")
	dry := fs.Bool("dry-run", false, "print what would be written, change nothing")
	list := fs.Bool("list", false, "list the harnesses and what install writes for each")
	asJSON := fs.Bool("json", false, "with --list: print the list as JSON")
	uninstall := fs.Bool("uninstall", false, "remove what install wrote (parts you edited are reported and left)")
	binary := fs.String("binary", "", "the mcpx binary the hooks run (default this one)")
	stateFlag := fs.String("state-dir", "", "where the hashes of what was written are kept (default $XDG_STATE_HOME/mcpx)")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if *list && *asJSON {
		type harness struct {
			Name    string `json:"name"`
			Summary string `json:"summary"`
		}
		doc := struct {
			Harnesses      []harness `json:"harnesses"`
			MCPServerEntry bool      `json:"mcpServerEntry"` // false: mcpx does not serve MCP yet
		}{Harnesses: []harness{}}
		for _, h := range deploy.Harnesses() {
			doc.Harnesses = append(doc.Harnesses, harness{h.Name, h.Summary})
		}
		b, _ := json.MarshalIndent(doc, "", "  ")
		fmt.Fprintf(c.stdout, "%s\n", b)
		return exitOK
	}
	if *list {
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		for _, h := range deploy.Harnesses() {
			fmt.Fprintf(tw, "%s\t%s\n", h.Name, h.Summary)
		}
		tw.Flush()
		fmt.Fprintln(c.stdout, "\nNo MCP server entry is written: mcpx does not serve MCP yet.")
		return exitOK
	}
	if len(pos) != 1 {
		return usageError(c, fs, "name one harness (or --list)")
	}
	h, err := deploy.LookupHarness(pos[0])
	if err != nil {
		return usageError(c, fs, "%v", err)
	}
	home := c.getenv("HOME")
	if !filepath.IsAbs(home) {
		fmt.Fprintln(c.stderr, "mcpx install: $HOME is not an absolute path")
		return exitFailed
	}
	bin := *binary
	if bin == "" {
		if bin, err = installedBinary(!*uninstall); err != nil {
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
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx install %s: %v\n", h.Name, err)
		return exitFailed
	}
	return printResults(c, h, e, results, *dry, *uninstall)
}

func printResults(c *cli, h deploy.Harness, e deploy.Env, results []deploy.Result, dry, uninstall bool) int {
	edited := 0
	for _, r := range results {
		switch {
		case r.Action == deploy.Edited:
			edited++
			fmt.Fprintf(c.stderr, "left as it is: %s was edited (or not written by mcpx). Difference (- mcpx's, + the file):\n%s", r.Part, indent(r.Diff))
		case dry && (r.Action == deploy.Create || r.Action == deploy.Update) && r.Part.Name != "" && strings.HasSuffix(r.Part.Path, ".json"):
			// An entry of a JSON file: the fragment alone is not a valid
			// file, so show the file as it would be.
			fmt.Fprintf(c.stdout, "would %s %s; the file would be:\n%s", r.Action, r.Part, indent(r.File))
		case dry && (r.Action == deploy.Create || r.Action == deploy.Update):
			fmt.Fprintf(c.stdout, "would %s %s:\n%s", r.Action, r.Part, indent(r.Part.Want))
		case dry && r.Action == deploy.Remove:
			fmt.Fprintf(c.stdout, "would remove %s\n", r.Part)
		default:
			fmt.Fprintf(c.stdout, "%s %s\n", r.Action, r.Part)
		}
	}
	if !uninstall {
		for _, n := range h.Notes(e) {
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
that calls it, and you reach every tool from the shell (mcpx call, catalog,
search, types, run) instead of loading MCP servers into your harness.

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
   run ` + "`mcpx install <%s> --dry-run`" + `, then without --dry-run. It writes an
   instructions section (once) and a session hook. Follow any "note:" it
   prints; a part reported as edited is the user's: leave it.
4. Check: ` + "`mcpx catalog`" + ` lists the servers and their tools, and
   ` + "`mcpx call demo.echo '{\"message\":\"hi\"}'`" + ` (with no config, the built-in demo
   server) answers.

Never run these with sudo: the daemon and its servers run as the user.
`
