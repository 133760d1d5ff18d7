package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/wire"
)

// status is `mcpx status [--json]`: the instances table.
func status(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "status")
	brokerAddr := brokerFlag(fs)
	noAutostart := autostartFlag(fs)
	asJSON := fs.Bool("json", false, "print the broker's JSON answer")
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
	if err := autostart(ctx, c, bc, *noAutostart); err != nil {
		return report(c, err)
	}
	var who *wire.Whoami
	if !*asJSON {
		if who, _, err = bc.Whoami(ctx, client.Caller{}); err != nil {
			return report(c, err)
		}
	}
	doc, raw, err := bc.Instances(ctx)
	if err != nil {
		return report(c, err)
	}
	if *asJSON {
		fmt.Fprintf(c.stdout, "%s\n", strings.TrimRight(string(raw), "\n"))
		return exitOK
	}
	printDaemon(c, who.Daemon, time.Now())
	if who.Daemon == nil { // not the owner: a remote broker, say who we are to it
		fmt.Fprintf(c.stdout, "broker %s %s, caller %s via %s\n", bc.Addr(), who.Version, who.Caller.Name, who.Caller.Via)
	}
	printNode(c, who.Node)
	if len(doc.Instances) == 0 {
		fmt.Fprintln(c.stdout, "no instances running")
	} else {
		printInstances(c, doc.Instances, time.Now())
	}
	if servers, _, err := bc.Servers(ctx); err == nil {
		printSessionless(c, client.Caller{Session: c.getenv("MCPX_SESSION_ID"), ParentSession: c.getenv("MCPX_PARENT_SESSION_ID"), Scope: c.getenv("MCPX_SCOPE")}, servers.Servers)
	}
	if s := doc.Stats; s != nil {
		fmt.Fprintf(c.stdout, "pool: %d spawns, %d restarts, %d start failures, %d crashes, %d wedged, %d evictions, %d reaps, %d refused (full), %d waiting\n",
			s.Spawns, s.Restarts, s.StartFailures, s.Crashes, s.Wedged, s.Evictions, s.Reaps, s.Exhausted, s.Queued)
	}
	printRecords(c, doc.Records)
	if pins, _, err := bc.ToolPins(ctx); err == nil {
		printPinsNote(c, pins)
	}
	if auth, _, err := bc.AuthStatus(ctx); err == nil {
		printSignInNote(c, auth)
	}
	return exitOK
}

// printSignInNote names the url servers whose calls fail until someone
// signs in (docs/oauth.md).
func printSignInNote(c *cli, l *wire.AuthStatusList) {
	for _, s := range l.Servers {
		switch {
		case s.NeedsSignIn && s.Caller == "":
			fmt.Fprintf(c.stdout, "sign-in needed: %s (%s): run `mcpx auth login %s`\n", s.Server, s.Reason, s.Server)
		case s.NeedsSignIn:
			fmt.Fprintf(c.stdout, "sign-in needed: %s for %s (%s): `mcpx auth login %s` as that caller\n", s.Server, s.Caller, s.Reason, s.Server)
		}
	}
}

func printInstances(c *cli, list []wire.Instance, now time.Time) {
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSERVER\tKEY\tROOT\tCWD\tPID\tEXEC\tAGE\tIDLE\tCALLS\tIN-FLIGHT\tSTATE")
	for _, in := range list {
		idle := "-"
		if in.InFlight == 0 && !in.LastUsed.IsZero() {
			idle = human(now.Sub(in.LastUsed))
		}
		state := in.State
		if in.State == "backoff" && in.BackoffUntil.After(now) {
			// Rounded up: a backoff with 300ms left is "1s", never "0s".
			state += " " + human(in.BackoffUntil.Sub(now).Truncate(time.Second)+time.Second)
		}
		if in.Restarts > 0 {
			state += fmt.Sprintf(" (%d restarts)", in.Restarts)
		}
		if in.Degraded != "" {
			state += " (degraded)"
		}
		if in.Sandbox != nil {
			state += " (confined)"
		}
		age := "-"
		if !in.Started.IsZero() {
			age = human(now.Sub(in.Started))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n",
			in.ID, in.Server, in.Key, orDash(in.Root), orDash(in.Cwd), pid(in.Pid), orDash(in.Exec),
			age, idle, in.Calls, in.InFlight, state)
	}
	tw.Flush()
	// Why an instance is not what was asked for, or keeps failing: the
	// table says that it is, these lines say why.
	for _, in := range list {
		if in.Degraded != "" {
			fmt.Fprintf(c.stdout, "%s: degraded: %s\n", in.ID, in.Degraded)
		}
		if in.LastError != "" {
			fmt.Fprintf(c.stdout, "%s: last error: %s\n", in.ID, in.LastError)
		}
		if sb := in.Sandbox; sb != nil {
			fmt.Fprintf(c.stdout, "%s: %s\n", in.ID, sandboxLine(sb))
		}
		if p := in.Program; p != nil && p.Spec != "" {
			lock, pin := "narHash "+orDash(p.NarHash), "floating"
			if p.Rev != "" {
				lock = "rev " + p.Rev
			}
			if p.Pinned {
				pin = "pinned"
			}
			fmt.Fprintf(c.stdout, "%s: program %s (%s, %s): %s\n", in.ID, p.Spec, lock, pin, p.StorePath)
		}
		if p := in.Program; p != nil && p.Environment != "" {
			fmt.Fprintf(c.stdout, "%s: environment %s (%s)\n", in.ID, p.Environment, orDash(p.EnvironmentRev))
		}
	}
}

// printDaemon is status's header: which daemon answered, and where to find
// it. d is nil for a caller the daemon does not show itself to.
func printDaemon(c *cli, d *wire.DaemonInfo, now time.Time) {
	if d == nil {
		return
	}
	cfg := d.Config
	if cfg == "" {
		cfg = "built-in demo server"
	}
	tcp := d.Address
	if tcp == "" {
		tcp = "off"
	}
	fmt.Fprintf(c.stdout, "daemon pid %d %s, up %s, socket %s, tcp %s, config %s\n",
		d.Pid, d.Version, human(now.Sub(d.Started)), d.Socket, tcp, cfg)
}

// printNode prints the daemon's tailnet node, if it has one.
func printNode(c *cli, n *wire.NodeInfo) {
	if n == nil {
		return
	}
	scheme := "http"
	if n.TLS {
		scheme = "https"
	}
	fmt.Fprintf(c.stdout, "tailnet node %s (%s), %s, %s://%s\n", n.Name, n.DNSName, strings.Join(n.IPs, " "), scheme, n.DNSName)
}

// human renders a duration the way people say it: 45s, 3m12s, 2h5m, 3d4h.
func human(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func pid(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// stop is `mcpx stop <instance-id>`.
func stop(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "stop")
	brokerAddr := brokerFlag(fs)
	asJSON := fs.Bool("json", false, `print {"stopped": "<instance id>"}`)
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(c, fs, "want one instance id (see `mcpx status`)")
	}
	bc, err := newBrokerClient(ctx, c, brokerAddr)
	if err != nil {
		return report(c, err)
	}
	if err := bc.StopInstance(ctx, pos[0]); err != nil {
		return report(c, err)
	}
	if *asJSON {
		b, _ := json.Marshal(map[string]string{"stopped": pos[0]})
		fmt.Fprintf(c.stdout, "%s\n", b)
		return exitOK
	}
	fmt.Fprintf(c.stdout, "stopped %s\n", pos[0])
	return exitOK
}

// sandboxLine is status's line about a confined instance: why, its
// network, what this kernel does not enforce of what it needs, and the
// limit that ended its last child.
func sandboxLine(sb *wire.InstanceSandbox) string {
	s := fmt.Sprintf("confined (%s), mode %s, network %s, fingerprint %s", whyText(sb.Why), sb.Mode, sb.Network, sb.Fingerprint)
	var missing []string
	for _, f := range sb.Enforcement {
		if f.Needed && !f.Enforced {
			missing = append(missing, f.Name)
		}
	}
	if len(missing) > 0 {
		s += "; NOT enforced: " + strings.Join(missing, ", ")
	}
	if sb.Limit != "" {
		s += "; last child ended by " + sb.Limit
	}
	return s
}
