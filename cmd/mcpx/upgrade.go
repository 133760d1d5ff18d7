package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/wire"
)

// upgradeOutcome is what `mcpx daemon upgrade --json` prints: the
// daemon's pid, version and generation once it runs Binary.
type upgradeOutcome struct {
	Pid        int    `json:"pid"`
	Version    string `json:"version"`
	Generation int    `json:"generation"`
	Binary     string `json:"binary"`
}

// daemonUpgrade is `mcpx daemon upgrade [--binary PATH] [--json]`: the daemon
// drains, re-executes itself (the same pid) as binary ("" = its own) and
// adopts its children; this waits until /v1/whoami shows the next
// generation, and says whether the binary asked for is what runs.
func daemonUpgrade(ctx context.Context, c *cli, bc *client.Client, binary string, asJSON bool) int {
	res, err := bc.UpgradeDaemon(ctx, binary)
	if err != nil {
		return report(c, err)
	}
	// The daemon drains its calls (--drain-timeout, the default assumed),
	// then re-executes; meanwhile its socket takes connections and holds them.
	wctx, cancel := context.WithTimeout(ctx, 2*api.DefaultDrainTimeout+30*time.Second)
	defer cancel()
	d, err := awaitGeneration(wctx, bc, res.Generation)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx: the daemon has not come back as generation %d: %v\n", res.Generation+1, err)
		return exitFailed
	}
	if d.UpgradeError != "" {
		fmt.Fprintf(c.stderr, "mcpx: the upgrade did not run %s: %s; the daemon runs its old binary again (pid %d, generation %d)\n", res.Binary, d.UpgradeError, d.Pid, d.Generation)
		return exitFailed
	}
	if asJSON {
		b, _ := json.Marshal(upgradeOutcome{Pid: d.Pid, Version: d.Version, Generation: d.Generation, Binary: res.Binary})
		fmt.Fprintf(c.stdout, "%s\n", b)
		return exitOK
	}
	fmt.Fprintf(c.stdout, "daemon upgraded: pid %d, version %s, generation %d (%s)\n", d.Pid, d.Version, d.Generation, res.Binary)
	return exitOK
}

// awaitGeneration polls whoami until the daemon's generation passes gen.
func awaitGeneration(ctx context.Context, bc *client.Client, gen int) (*wire.DaemonInfo, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		who, _, err := bc.Whoami(ctx, client.Caller{})
		if err == nil && who.Daemon != nil && who.Daemon.Generation > gen {
			return who.Daemon, nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return nil, err
			}
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// printGeneration adds the daemon's generation to `mcpx daemon info`.
func printGeneration(c *cli, d *wire.DaemonInfo) {
	fmt.Fprintf(c.stdout, "gen      %d\n", d.Generation)
	if d.UpgradeError != "" {
		fmt.Fprintf(c.stdout, "upgrade  failed: %s\n", d.UpgradeError)
	}
}
