package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"mcpx.dev/mcpx/daemon/doctor"
	"mcpx.dev/mcpx/internal/paths"
)

// doctorCmd is `mcpx doctor [--json]`: it checks the config, the state
// directory, the socket, the tailnet node (with --tailnet), nix (when a
// server's command is nix:) and that every server starts and lists its
// tools (through the daemon when one answers, else in a throwaway broker of
// its own), and prints each problem with its fix (package daemon/doctor).
// Exit 1 when something is wrong.
func doctorCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "doctor")
	asJSON := fs.Bool("json", false, "print the findings as JSON")
	configPath := fs.String("config", "", "config file (default $XDG_CONFIG_HOME/mcpx/config.json)")
	stateFlag := fs.String("state-dir", "", "state directory (default $XDG_STATE_HOME/mcpx)")
	socketFlag := fs.String("socket", "", "the daemon's socket (default $XDG_RUNTIME_DIR/mcpx/mcpx.sock, else in the state directory)")
	timeout := fs.Duration("server-timeout", 30*time.Second, "how long each server may take to start and list its tools")
	tailnet := addTailnetFlags(fs)
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(c, fs, "unexpected argument %q", pos[0])
	}
	if *timeout <= 0 {
		return usageError(c, fs, "--server-timeout must be positive, e.g. 30s")
	}
	if !flagSet(fs, "tailnet-up-timeout") {
		*tailnet.upTimeout = 15 * time.Second // a check, not a daemon: fail soon
	}
	d := &doctor.Doctor{Getenv: c.getenv, Version: version()}
	cfg, src := d.Config(*configPath)
	where, err := paths.Serve(c.getenv, "", *stateFlag, *socketFlag)
	state, sock := where.State, where.Socket
	if err != nil {
		d.Problem("state", "", err.Error(), "set $HOME (or $XDG_STATE_HOME and $XDG_RUNTIME_DIR)")
	} else {
		d.State(state)
	}
	bc := d.Socket(ctx, sock)
	switch {
	case bc != nil:
		d.DaemonTailnet(ctx, bc, *tailnet.on, *tailnet.hostname)
	case *tailnet.on:
		checkTailnet(ctx, c, d, tailnet, state)
	}
	d.Sandbox(nil)
	if cfg != nil {
		d.Nix(cfg)
		d.Servers(ctx, cfg, src, state, bc, *timeout)
		d.SignIns(ctx, cfg, *timeout)
	}
	if *asJSON {
		b, _ := json.MarshalIndent(struct {
			OK       bool             `json:"ok"`
			Findings []doctor.Finding `json:"findings"`
		}{!d.Failed(), d.Findings}, "", "  ")
		fmt.Fprintf(c.stdout, "%s\n", b)
	} else {
		printFindings(c, d.Findings)
	}
	if d.Failed() {
		return exitToolError
	}
	return exitOK
}

// checkTailnet brings the node up as `mcpx serve --tailnet` would, bounded
// by --tailnet-up-timeout, when no daemon runs: a node that needs a login,
// or cannot reach its control server, is reported with the way out Up
// names.
func checkTailnet(ctx context.Context, c *cli, d *doctor.Doctor, f tailnetFlags, state string) {
	node, err := f.node(c.getenv, state, slog.New(slog.DiscardHandler))
	if err != nil {
		d.Problem("tailnet", *f.hostname, err.Error(), "fix the --tailnet flags")
		return
	}
	defer node.Close()
	info, err := node.Up(ctx)
	d.TailnetUp(*f.hostname, cmp.Or(info.DNSName, info.Name), err)
}

// flagSet reports whether the command line set the flag called name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func printFindings(c *cli, findings []doctor.Finding) {
	problems := 0
	for _, f := range findings {
		mark := "ok  "
		if !f.OK {
			mark = "FAIL"
			problems++
		}
		subject := ""
		if f.Subject != "" {
			subject = " " + f.Subject
		}
		fmt.Fprintf(c.stdout, "%s %s%s: %s\n", mark, f.Check, subject, f.Detail)
		if f.Fix != "" {
			fmt.Fprintf(c.stdout, "     fix: %s\n", f.Fix)
		}
	}
	if problems == 0 {
		fmt.Fprintln(c.stdout, "no problems found")
	} else {
		fmt.Fprintf(c.stdout, "%d problem%s found\n", problems, plural(problems))
	}
}
