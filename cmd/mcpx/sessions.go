package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/scripts/runner"
	"mcpx.dev/mcpx/wire"
)

// sessionsCmd is `mcpx sessions ls [--json] | show <session> |
// stop <session> | set <session> [--idle 1h] [--name n] | watch <session>`:
// the instances keyed by a session, parent session, lease or pid, grouped
// by key. A session is named by its key or by the name set gives it.
func sessionsCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "sessions")
	brokerAddr := brokerFlag(fs)
	asJSON := fs.Bool("json", false, "print the broker's JSON answer (watch: one JSON object per call)")
	idle := fs.String("idle", "", "set: the session's own idle timeout, e.g. 1h (0 = each server's)")
	name := fs.String("name", "", `set: name the session, so it outlives its creator ("" with --name= clears it)`)
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	switch {
	case len(pos) == 1 && pos[0] == "ls":
	case len(pos) == 2 && (pos[0] == "show" || pos[0] == "stop" || pos[0] == "set" || pos[0] == "watch"):
	default:
		return usageError(c, fs, "want `ls`, `show <key|name>`, `stop <key|name>`, `set <key|name> [--idle d] [--name n]` or `watch <key|name>`")
	}
	var patch wire.SessionPatch
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "idle":
			patch.IdleTimeout = idle
		case "name":
			patch.Name = name
		}
	})
	if pos[0] == "set" && patch.IdleTimeout == nil && patch.Name == nil {
		return usageError(c, fs, "set wants --idle or --name")
	}
	if patch.IdleTimeout != nil {
		if _, err := time.ParseDuration(*patch.IdleTimeout); err != nil {
			return usageError(c, fs, "--idle %q is not a duration such as 30m or 1h", *patch.IdleTimeout)
		}
	}
	bc, err := newBrokerClient(ctx, c, brokerAddr)
	if err != nil {
		return report(c, err)
	}
	var raw []byte
	switch pos[0] {
	case "ls":
		var doc *wire.SessionList
		if doc, raw, err = bc.Sessions(ctx); err == nil && !*asJSON {
			printSessions(c, doc.Sessions, time.Now())
		}
	case "show":
		var doc *wire.Session
		if doc, raw, err = bc.Session(ctx, pos[1]); err == nil && !*asJSON {
			printSession(c, doc, time.Now())
		}
	case "stop":
		if err = bc.StopSession(ctx, pos[1]); err == nil {
			fmt.Fprintf(c.stdout, "stopped %s\n", pos[1])
			return exitOK
		}
	case "set":
		var doc *wire.Session
		if doc, err = bc.SetSession(ctx, pos[1], patch); err == nil {
			printSession(c, doc, time.Now())
			return exitOK
		}
	case "watch":
		return watchSession(ctx, c, bc, pos[1], *asJSON)
	}
	if err != nil {
		return report(c, err)
	}
	if *asJSON {
		fmt.Fprintf(c.stdout, "%s\n", strings.TrimRight(string(raw), "\n"))
	}
	return exitOK
}

// watchSession is `mcpx sessions watch <session>`: the session's tool
// calls as they finish, until interrupted — time, server.tool, duration,
// outcome (and the error's kind), the caller.
func watchSession(ctx context.Context, c *cli, bc *client.Client, ref string, asJSON bool) int {
	err := bc.Calls(ctx, ref, func(call wire.CallFinished) error {
		if asJSON {
			b, _ := json.Marshal(call)
			_, err := fmt.Fprintf(c.stdout, "%s\n", b)
			return err
		}
		_, err := fmt.Fprintln(c.stdout, callLine(call))
		return err
	})
	if err != nil && ctx.Err() == nil {
		return report(c, err)
	}
	return exitOK
}

// callLine renders one finished call for people:
//
//	15:04:05.000 demo.echo 3ms ok local:4242
//	15:04:06.100 demo.fail 12ms error (child-failed) local:4242
func callLine(call wire.CallFinished) string {
	name := call.Server
	if call.Tool != "" {
		name += "." + call.Tool
	}
	d := time.Duration(call.DurationMs * float64(time.Millisecond))
	if d >= time.Millisecond {
		d = d.Round(100 * time.Microsecond)
	} else {
		d = d.Round(time.Microsecond)
	}
	s := fmt.Sprintf("%s %s %s %s", call.Time.Local().Format("15:04:05.000"), orDash(name), d, call.Outcome)
	if call.Error != "" {
		s += " (" + call.Error + ")"
	}
	s += " " + call.Caller
	if call.Dropped > 0 {
		s += fmt.Sprintf(" [%d calls before this one dropped: the reader fell behind]", call.Dropped)
	}
	return s
}

func printSessions(c *cli, list []wire.Session, now time.Time) {
	if len(list) == 0 {
		fmt.Fprintln(c.stdout, "no sessions (instances keyed by a session, parent session, lease or pid)")
		return
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tNAME\tSERVER\tINSTANCE\tPID\tAGE\tIDLE\tCALLS\tCREATOR")
	for _, s := range list {
		for _, in := range s.Instances {
			idle := "-"
			if in.InFlight == 0 && !in.LastUsed.IsZero() {
				idle = human(now.Sub(in.LastUsed))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", s.Key, orDash(s.Name), in.Server, in.ID,
				pid(in.Pid), human(now.Sub(in.Created)), idle, in.Calls, orDash(s.Creator.Name))
		}
	}
	tw.Flush()
}

func printSession(c *cli, s *wire.Session, now time.Time) {
	fmt.Fprintf(c.stdout, "key:     %s (%s)\n", s.Key, s.Scope)
	if s.Name != "" {
		fmt.Fprintf(c.stdout, "name:    %s (outlives its creator)\n", s.Name)
	}
	if s.IdleTimeout != "" {
		fmt.Fprintf(c.stdout, "idle:    stops after %s idle\n", s.IdleTimeout)
	}
	cr := s.Creator
	where := strings.TrimSpace(strings.Join([]string{cr.Host, cr.Cwd}, " "))
	fmt.Fprintf(c.stdout, "creator: %s via %s %s\n", orDash(cr.Name), orDash(cr.Via), where)
	var more []string
	for _, kv := range [][2]string{{"pid", pid(cr.Pid)}, {"user", cr.User}, {"parent session", cr.ParentSession}, {"client", cr.Client}} {
		if kv[1] != "" && kv[1] != "-" {
			more = append(more, kv[0]+" "+kv[1])
		}
	}
	if len(more) > 0 {
		fmt.Fprintf(c.stdout, "         %s\n", strings.Join(more, ", "))
	}
	fmt.Fprintf(c.stdout, "created: %s ago, last used %s ago, %d calls\n", human(now.Sub(s.Created)), human(now.Sub(s.LastUsed)), s.Calls)
	printHistory(c, s, now)
	printInstances(c, s.Instances, now)
}

// printHistory lists who attached to s and how each detached.
func printHistory(c *cli, s *wire.Session, now time.Time) {
	if len(s.History) == 0 {
		return
	}
	fmt.Fprintln(c.stdout, "history:")
	if s.Dropped > 0 {
		fmt.Fprintf(c.stdout, "  (%d older attachments not kept)\n", s.Dropped)
	}
	for _, a := range s.History {
		end := "attached"
		if a.Ended != nil {
			end = fmt.Sprintf("%s %s ago", a.End, human(now.Sub(*a.Ended)))
		}
		fmt.Fprintf(c.stdout, "  %s ago  pid %s  %s  %s\n", human(now.Sub(a.At)), pid(a.Pid), orDash(a.Cwd), end)
	}
}

// leaseCmd is `mcpx lease run [--ttl 30s] [--json] -- <cmd> [args…]`: run
// a command under a lease. The lease's id is exported as $MCPX_LEASE (the
// CLI, the Go client and the generated TypeScript client send it as
// Mcpx-Lease), it is renewed every ttl/3 while the command runs and
// released when it exits, with the command's exit code. Killed outright
// (SIGKILL), this process renews no more, and the lease expires within
// its ttl. With --json the command's output is captured and one envelope
// printed (leaseEnvelope).
func leaseCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "lease")
	brokerAddr := brokerFlag(fs)
	noAutostart := autostartFlag(fs)
	ttl := fs.Duration("ttl", 30*time.Second, "the lease's ttl: how long it outlives this process if killed (renewed every ttl/3)")
	asJSON := fs.Bool("json", false, "capture the command's stdout and stderr and print one JSON envelope: the lease, the command, its exit code, duration and output, whether the lease was released")
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fs.Usage() // `mcpx help lease`, `mcpx lease -h`
		return exitOK
	}
	if len(args) == 0 || args[0] != "run" {
		return usageError(c, fs, "want `run [--ttl 30s] [--json] -- <cmd> [args…]`")
	}
	// Flags end at the command: its own flags are its own.
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return usageError(c, fs, "want a command after `--`")
	}
	if *ttl < time.Second {
		return usageError(c, fs, "--ttl %s is shorter than a second", *ttl)
	}
	bc, err := newBrokerClient(ctx, c, brokerAddr)
	if err != nil {
		return report(c, err)
	}
	if err := autostart(ctx, c, bc, *noAutostart); err != nil {
		return report(c, err)
	}
	lease, err := bc.HoldLease(ctx, *ttl, renewFailed(c))
	if err != nil {
		return report(c, err)
	}
	env := leaseEnvelope{Lease: lease.ID, TTL: ttl.String(), Command: argv}
	stdout, stderr := c.stdout, c.stderr
	out, errOut := &runner.Capped{Max: maxLeaseOutput}, &runner.Capped{Max: maxLeaseOutput}
	if *asJSON {
		stdout, stderr = out, errOut
	}
	began := time.Now()
	code, err := runner.RunLeased(ctx, lease.ID, argv, c.stdin, stdout, stderr)
	if err != nil { // the command did not start (127), or waiting for it failed
		fmt.Fprintf(stderr, "mcpx lease: %v\n", err)
		if re := (*runner.Error)(nil); errors.As(err, &re) && re.Op == runner.OpWait {
			code = exitFailed
		}
	}
	env.ExitCode, env.DurationMs = code, time.Since(began).Milliseconds()
	// Release with a context of its own: ctx may be the interrupt that
	// ended the command.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := lease.Release(rctx); err != nil {
		env.ReleaseError = err.Error()
		fmt.Fprintf(c.stderr, "mcpx lease: releasing lease %s: %v (it expires within %s)\n", lease.ID, err, *ttl)
	} else {
		env.Released = true
	}
	if *asJSON {
		env.Stdout, env.Stderr, env.Dropped = string(out.Bytes()), string(errOut.Bytes()), out.Dropped()+errOut.Dropped()
		enc := json.NewEncoder(c.stdout)
		enc.SetEscapeHTML(false) // a command's `>` and `&` as written
		enc.SetIndent("", "  ")  // as `mcpx run --json`
		enc.Encode(env)          //nolint:errcheck // stdout gone: nothing to tell
	}
	return code
}

// leaseEnvelope is what `mcpx lease run --json` prints.
type leaseEnvelope struct {
	Lease      string   `json:"lease"`
	TTL        string   `json:"ttl"`
	Command    []string `json:"command"`
	ExitCode   int      `json:"exitCode"` // 128+n for a signal; 127 when it did not start
	DurationMs int64    `json:"durationMs"`
	Stdout     string   `json:"stdout"`
	Stderr     string   `json:"stderr"`
	// Dropped is how many bytes of output went past maxLeaseOutput.
	Dropped      int    `json:"dropped,omitempty"`
	Released     bool   `json:"released"`
	ReleaseError string `json:"releaseError,omitempty"`
}

// maxLeaseOutput bounds what `lease run --json` keeps of stdout, and of
// stderr.
const maxLeaseOutput = 16 << 20
