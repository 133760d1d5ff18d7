package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"mcpx.dev/mcpx/client/fleet"
	"mcpx.dev/mcpx/wire"
)

// fleetCmd is `mcpx fleet ls [--json] [--tag t] [--probe]`: the brokers
// on the tailnet. With --tsnet and no broker named (--broker, --remote,
// $MCPX_BROKER, $MCPX_REMOTE) the CLI's own node finds and asks them;
// otherwise the daemon named (default the default remote, else the local
// one) does, with its node (GET /v1/fleet). `mcpx --broker <name> …`
// then drives any of them.
func fleetCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "fleet")
	bo := brokerFlag(fs)
	asJSON := fs.Bool("json", false, "print the fleet as JSON (the GET /v1/fleet document)")
	tag := fs.String("tag", "", "select the brokers among the tailnet's peers by this tag (default "+wire.DefaultFleetTag+")")
	probe := fs.Bool("probe", false, "select the brokers by asking every peer's :80 /healthz instead of by tag")
	timeout := fs.Duration("timeout", tsnetFleetTimeout, "how long each broker has to answer before it is shown unreachable (without --tsnet: default the daemon's, 2s)")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 || pos[0] != "ls" {
		return usageError(c, fs, "want `ls`")
	}
	if *tag != "" {
		if *probe {
			return usageError(c, fs, "--tag and --probe select brokers in two ways: give one")
		}
		if err := fleet.CheckTag(*tag); err != nil {
			return usageError(c, fs, "--tag: %v", err)
		}
	}
	if *timeout <= 0 {
		return usageError(c, fs, "--timeout must be positive, e.g. 2s")
	}
	var f *wire.Fleet
	if bo.tsnet && !bo.named(c) {
		// The CLI's own node is the one looking.
		state, err := stateDir(c.getenv)
		if err != nil {
			return report(c, err)
		}
		n, err := tsnetNode(ctx, c, state)
		if err != nil {
			return report(c, err)
		}
		peers, err := n.Peers(ctx)
		if err != nil {
			return report(c, fmt.Errorf("listing the tailnet's peers: %w", err))
		}
		doc := fleet.Discover(ctx, peers, fleet.Options{Dial: n.Dial, Tag: *tag, Probe: *probe, Timeout: *timeout})
		doc.Node = n.Info().DNSName
		f = &doc
	} else {
		bc, err := newBrokerClient(ctx, c, bo)
		if err != nil {
			return report(c, err)
		}
		var d time.Duration // the daemon's bound unless --timeout was given
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "timeout" {
				d = *timeout
			}
		})
		if f, _, err = bc.Fleet(ctx, *tag, *probe, d); err != nil {
			return report(c, err)
		}
	}
	if *asJSON {
		b, _ := json.MarshalIndent(f, "", "  ")
		fmt.Fprintf(c.stdout, "%s\n", b)
		return exitOK
	}
	printFleet(c, f)
	return exitOK
}

// tsnetFleetTimeout is the bound on each broker's answer to the CLI's own
// node. It is longer than the daemon's (fleet.DefaultTimeout): a node just
// started reaches each peer for the first time, and the first WireGuard
// handshake is often lost while the peer learns the new process's
// endpoints; the retry comes 5s later.
const tsnetFleetTimeout = 8 * time.Second

func printFleet(c *cli, f *wire.Fleet) {
	how := "tagged " + f.Tag
	if f.Probe {
		how = "found by probing every peer"
	}
	fmt.Fprintf(c.stdout, "brokers %s, as seen from %s\n", how, f.Node)
	if len(f.Brokers) == 0 {
		fmt.Fprintln(c.stdout, "none: tag each broker's node (mcpx serve --tailnet --tailnet-tags tag:mcpx), or try --probe")
		return
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDNS NAME\tSTATE\tVERSION\tINSTANCES\tSERVERS")
	for _, b := range f.Brokers {
		name := b.Name
		if b.Self {
			name += " (self)"
		}
		state, version, instances, servers := b.State, "-", "-", b.Error
		if b.Version != "" {
			version = b.Version
		}
		if b.State == wire.FleetOK {
			instances = fmt.Sprint(b.Instances)
			var names []string
			for _, s := range b.Servers {
				names = append(names, s.Name)
			}
			servers = strings.Join(names, ", ")
			if servers == "" {
				servers = "(none you may use)"
			}
		}
		if !b.Online && b.State != wire.FleetOK {
			state += " (offline)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, b.DNSName, state, version, instances, servers)
	}
	tw.Flush()
}
