package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"mcpx.dev/mcpx/wire"
)

// approveFlags are `mcpx auth approve`'s flags.
type approveFlags struct {
	servers, roots, ttl *string
	deny                *bool
}

func addApproveFlags(fs *flag.FlagSet) approveFlags {
	return approveFlags{
		servers: fs.String("servers", "", "approve: comma-separated servers the client may use (default: every server you may use)"),
		roots:   fs.String("roots", "", "approve: comma-separated absolute directories its calls may declare (default: anywhere)"),
		ttl:     fs.String("ttl", "", "approve: how long the client may keep refreshing its token, e.g. 8h (default 24h, at most 720h)"),
		deny:    fs.Bool("deny", false, "approve: refuse the client instead"),
	}
}

// run is `mcpx auth approve CODE`: the owner decides a client's sign-in on
// the public face (docs/public.md), over the unix socket.
func (f approveFlags) run(ctx context.Context, c *cli, bo *brokerOpts, code string, asJSON bool) int {
	req := wire.PublicApprove{Code: code, Servers: splitList(*f.servers), TTL: *f.ttl, Deny: *f.deny}
	for _, r := range splitList(*f.roots) {
		abs, err := filepath.Abs(r)
		if err != nil {
			return report(c, fmt.Errorf("--roots %q: %w", r, err))
		}
		req.Roots = append(req.Roots, abs)
	}
	bc, err := newBrokerClient(ctx, c, bo)
	if err != nil {
		return report(c, err)
	}
	out, raw, err := bc.ApprovePublic(ctx, req)
	if err != nil {
		return report(c, err)
	}
	if asJSON {
		fmt.Fprintf(c.stdout, "%s\n", strings.TrimRight(string(raw), "\n"))
		return exitOK
	}
	if out.Denied {
		fmt.Fprintf(c.stdout, "denied %s (returning to %s)\n", out.ClientName, out.RedirectHost)
		return exitOK
	}
	fmt.Fprintf(c.stdout, "approved %s (returning to %s) for %s: servers %s, roots %s\n", out.ClientName, out.RedirectHost, out.Resource,
		tokenList(req.Servers), tokenList(req.Roots))
	return exitOK
}
