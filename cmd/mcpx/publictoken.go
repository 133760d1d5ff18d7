package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"mcpx.dev/mcpx/auth/access"
	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/wire"
)

// printPublicTokens is `mcpx token ls`'s table of the public face's OAuth
// clients and their live tokens (docs/public.md), read from the daemon's
// file (none: nothing): a client's row (its id, name, how it registered,
// where it returns to, its live sign-ins), then one row per live access
// token. Never a secret.
func printPublicTokens(c *cli, state string) error {
	if state == "" {
		var err error
		if state, err = stateDir(c.getenv); err != nil {
			return err
		}
	}
	st, err := access.Open(filepath.Join(state, "auth"))
	if err != nil {
		return err
	}
	clients := st.Clients()
	if len(clients) == 0 {
		return nil
	}
	fmt.Fprintln(c.stdout, "OAuth clients of the public face (`mcpx token revoke ID` revokes a client, or one sign-in by its token)")
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCLIENT\tREGISTERED BY\tREDIRECT HOSTS\tSIGN-INS\tRESOURCE\tSERVERS\tAPPROVER\tEXPIRES")
	for _, ct := range clients {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t\t\t\t\n", ct.Client.ID, orDash(ct.Client.Name), ct.Client.Registration(),
			orDash(strings.Join(redirectHosts(ct.Client.RedirectURIs), ",")), ct.SignIns)
		for _, t := range ct.Tokens {
			servers := "-"
			if len(t.Rights) > 0 {
				servers = tokenList(t.Rights[0].Servers)
			}
			fmt.Fprintf(tw, "  %s\t%s\t\t\t\t%s\t%s\t%s\t%s\n", t.ID, "token", t.Resource, servers, orDash(t.Approver), t.Expires.Local().Format(time.RFC3339))
		}
	}
	tw.Flush()
	fmt.Fprintln(c.stdout)
	return nil
}

// redirectHosts are the hosts of a client's redirect URIs, each once.
func redirectHosts(uris []string) []string {
	var out []string
	for _, ru := range uris {
		if u, err := url.Parse(ru); err == nil && !slices.Contains(out, u.Host) {
			out = append(out, u.Host)
		}
	}
	return out
}

// revokePublic is `mcpx token revoke ID` for an OAuth token or client of
// the public face, asked of the daemon (the owner only). done is false
// when the daemon has no such id, no public face, or does not take the
// caller as its owner: the id is then tried as a signed token's.
func revokePublic(ctx context.Context, c *cli, bc *client.Client, id string, asJSON bool) (done bool, raw []byte, err error) {
	rv, raw, err := bc.RevokePublic(ctx, id)
	var p *wire.Problem
	switch {
	case errors.As(err, &p) && (p.Status == http.StatusNotFound || p.Status == http.StatusServiceUnavailable || p.Status == http.StatusForbidden):
		return false, nil, nil
	case err != nil:
		return false, nil, err
	case asJSON:
		return true, raw, nil
	}
	name := cmp.Or(rv.Name, rv.Client)
	if rv.Token != "" {
		fmt.Fprintf(c.stdout, "revoked the sign-in of OAuth token %s of %s (%d tokens): its next call is refused, and it cannot refresh\n", rv.Token, name, rv.Tokens)
	} else {
		fmt.Fprintf(c.stdout, "revoked OAuth client %s (%s) and its %d tokens: it must sign in (and register) again\n", name, rv.Client, rv.Tokens)
	}
	return true, raw, nil
}
