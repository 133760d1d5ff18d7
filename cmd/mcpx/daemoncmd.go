package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/daemon"
	"mcpx.dev/mcpx/internal/paths"
	"mcpx.dev/mcpx/wire"
)

// daemonCmd is `mcpx daemon stop|info|upgrade`.
func daemonCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "daemon")
	brokerAddr := brokerFlag(fs)
	asJSON := fs.Bool("json", false, "print what the command says as a JSON object: info the daemon's description, stop and upgrade their outcome")
	force := fs.Bool("force", false, "stop: do not drain; stop every child at once, cutting the calls in flight")
	binary := fs.String("binary", "", "upgrade: the mcpx binary to run (an absolute path; default: the daemon's own)")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 || (pos[0] != "stop" && pos[0] != "info" && pos[0] != "upgrade") {
		return usageError(c, fs, "want `stop`, `info` or `upgrade`")
	}
	bc, err := newBrokerClient(ctx, c, brokerAddr)
	if err != nil {
		return report(c, err)
	}
	if pos[0] == "info" {
		return daemonInfoCmd(ctx, c, bc, *asJSON)
	}
	if pos[0] == "upgrade" {
		return daemonUpgrade(ctx, c, bc, *binary, *asJSON)
	}
	return daemonStop(ctx, c, bc, *force, *asJSON)
}

// daemonInfoCmd prints where the daemon is and how to reach it.
func daemonInfoCmd(ctx context.Context, c *cli, bc *client.Client, asJSON bool) int {
	who, _, err := bc.Whoami(ctx, client.Caller{})
	if err != nil {
		return report(c, err)
	}
	d := who.Daemon
	if d == nil {
		fmt.Fprintf(c.stderr, "mcpx: the daemon at %s does not describe itself to this caller\n", bc.Addr())
		return exitFailed
	}
	if asJSON {
		b, _ := json.MarshalIndent(d, "", "  ")
		fmt.Fprintf(c.stdout, "%s\n", b)
		return exitOK
	}
	url := "off"
	if d.Address != "" {
		url = "http://" + d.Address
	}
	cfg := d.Config
	if cfg == "" {
		cfg = "(the built-in demo server)"
	}
	fmt.Fprintf(c.stdout, "pid      %d\nversion  %s\nstarted  %s\nsocket   %s\nurl      %s\nconfig   %s\nrecord   %s\ntoken    %s\nlog      %s\n",
		d.Pid, d.Version, d.Started.Local().Format(time.RFC3339), d.Socket, url, cfg,
		filepath.Join(d.State, wire.RecordFile), filepath.Join(d.State, wire.TokenFile), daemon.LogPath(d.State))
	printGeneration(c, d)
	// A daemon a client started writes its stderr there; one in the
	// foreground, to its terminal.
	if out := filepath.Join(d.State, wire.LogFile); exists(out) {
		fmt.Fprintf(c.stdout, "stderr   %s\n", out)
	}
	return exitOK
}

// stopOutcome is what `mcpx daemon stop --json` prints: the daemon
// asked (Broker), State "not running" (none was: nothing to stop),
// "stopping" (asked; a remote daemon, or this process's own, is not
// waited for) or "stopped" (its process, Pid, is gone).
type stopOutcome struct {
	Broker string `json:"broker"`
	State  string `json:"state"`
	Pid    int    `json:"pid,omitempty"`
}

// daemonStop asks the daemon to stop and, for a daemon on this machine,
// waits until its process is gone (its calls drained, its children
// stopped). No daemon running is not an error: it is what was asked for.
func daemonStop(ctx context.Context, c *cli, bc *client.Client, force, asJSON bool) int {
	say := func(o stopOutcome, text string) int {
		if asJSON {
			b, _ := json.Marshal(o)
			text = string(b)
		}
		fmt.Fprintln(c.stdout, text)
		return exitOK
	}
	who, _, err := bc.Whoami(ctx, client.Caller{})
	var unreachable *client.UnreachableError
	if errors.As(err, &unreachable) {
		return say(stopOutcome{Broker: bc.Addr(), State: "not running"}, "no daemon is running at "+bc.Addr())
	}
	if err != nil {
		return report(c, err)
	}
	stop := bc.StopDaemon
	if force {
		stop = bc.StopDaemonNow
	}
	if err := stop(ctx); err != nil {
		return report(c, err)
	}
	if who.Daemon == nil || !bc.Unix() || who.Daemon.Pid == os.Getpid() {
		return say(stopOutcome{Broker: bc.Addr(), State: "stopping"}, "daemon stopping")
	}
	pid := who.Daemon.Pid
	// The daemon drains calls, then stops its children, each bounded by
	// --drain-timeout (the default assumed).
	wctx, cancel := context.WithTimeout(ctx, 2*api.DefaultDrainTimeout+10*time.Second)
	defer cancel()
	if !paths.WaitGone(wctx, pid) {
		fmt.Fprintf(c.stderr, "mcpx: the daemon (pid %d) is still stopping; its log is %s\n", pid, daemon.LogPath(who.Daemon.State))
		return exitFailed
	}
	return say(stopOutcome{Broker: bc.Addr(), State: "stopped", Pid: pid}, fmt.Sprintf("daemon stopped (pid %d)", pid))
}

// reloadCmd is `mcpx reload`: the daemon reads its config again. A config
// with errors is refused, the errors printed, and the running config kept.
func reloadCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "reload")
	brokerAddr := brokerFlag(fs)
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON: the servers now served and the config file")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(c, fs, "unexpected argument %q", pos[0])
	}
	bc, err := newBrokerClient(ctx, c, brokerAddr)
	if err != nil {
		return report(c, err)
	}
	res, err := bc.ReloadDaemon(ctx)
	var p *wire.Problem
	if errors.As(err, &p) && p.Kind() == wire.KindConfig {
		// The user's config does not load: exit 1, as `mcpx config check` and
		// `mcpx serve` do for it (the README's exit codes), not 4.
		report(c, err)
		return exitToolError
	}
	if err != nil {
		return report(c, err)
	}
	if *asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintf(c.stdout, "%s\n", b)
		return exitOK
	}
	src := res.Config
	if src == "" {
		src = "the built-in demo server"
	}
	fmt.Fprintf(c.stdout, "reloaded: %d server%s (%s)\n", res.Servers, plural(res.Servers), src)
	return exitOK
}

// exists reports whether a file is at path.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
