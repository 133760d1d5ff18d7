package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/wire"
)

// tokenCmd is `mcpx token mint|ls|revoke <id>|rotate`: the broker's signed
// bearer tokens (package auth), through the /v1/tokens routes; `revoke`
// and `ls` also take the public face's OAuth clients and their tokens
// (publictoken.go). Minting
// needs the unix socket as the daemon's user, or an admin caller. And
// `mcpx token add <name>|revoke <name>`: the owner's named tokens for
// loopback TCP (package auth/owner), kept in this machine's state
// directory; `ls` lists both.
func tokenCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "token")
	brokerAddr := brokerFlag(fs)
	stateFlag := fs.String("state-dir", "", "add, revoke, ls: the daemon's state directory, which keeps the owner tokens (default $XDG_STATE_HOME/mcpx)")
	asJSON := fs.Bool("json", false, "print the broker's JSON answer")
	sub := fs.String("sub", "", "mint: who the token is for; it becomes the caller's name (required)")
	servers := fs.String("servers", "", "mint: comma-separated servers the token may use, or '*' (required)")
	roots := fs.String("roots", "", "mint: comma-separated absolute directories under which a declared cwd must lie ('/' = anywhere; none = no cwd)")
	scopes := fs.String("scopes", "", "mint: comma-separated scope kinds its calls may use (default all)")
	tools := fs.String("tools", "", "mint: comma-separated tool patterns, globs over server.tool with * as the only wildcard (\"github.get_*\"; default every tool of its servers)")
	ttl := fs.Duration("ttl", 24*time.Hour, "mint: how long the token lives (at most 2160h)")
	admin := fs.Bool("admin", false, "mint: the token may use the admin routes (tokens, daemon, others' instances)")
	metricsRight := fs.Bool("metrics", false, "mint: the token may read /metrics and /v1/fleet/sd (a Prometheus server's token; admin implies it)")
	codeRight := fs.Bool("code", false, "mint: the token may run code on the broker through /mcp's run tool (code mode), confined by deno to its servers and roots")
	mcpMode := fs.String("mcp-mode", "", "mint: the tools /mcp lists to the token's clients when they ask for none: tools, code (search and run) or both")
	projectConfig := fs.Bool("project-config", false, "mint: the project files on the bearer's config chain (found upward from its cwd) may define its servers")
	rate := fs.String("rate", "", "mint: how many calls the token may make, \"100/m\" (also /s and /h); beyond it calls get 429 (default no limit)")
	burst := fs.Int("burst", 0, "mint: how many calls may come at once under --rate (default its count)")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	switch {
	case len(pos) == 1 && (pos[0] == "mint" || pos[0] == "ls" || pos[0] == "rotate"):
	case len(pos) == 2 && (pos[0] == "revoke" || pos[0] == "add"):
	default:
		return usageError(c, fs, "want `mint --sub NAME --servers …`, `add NAME`, `ls`, `revoke <id or name>` (a signed token, an owner token, or an OAuth client or token of the public face) or `rotate`")
	}
	owners, err := ownerTokens(c, *stateFlag)
	if err != nil {
		return report(c, err)
	}
	// Owner tokens are this machine's: with --broker elsewhere, only an
	// explicit --state-dir names them.
	local := brokerAddr.addr == "" || *stateFlag != ""
	switch has, err := owners.Has(pos[len(pos)-1]); {
	case pos[0] == "add":
		return addOwnerToken(c, owners, pos[1], *asJSON)
	case pos[0] == "revoke" && local && err == nil && has:
		info, err := owners.Revoke(pos[1])
		if err != nil {
			return report(c, err)
		}
		fmt.Fprintf(c.stdout, "revoked owner token %s (made %s): the daemon refuses it from its next request\n", info.Name, info.Created.Local().Format(time.RFC3339))
		return exitOK
	case pos[0] == "ls" && local && !*asJSON:
		if err := printOwnerTokens(c, owners); err != nil {
			return report(c, err)
		}
		if err := printPublicTokens(c, *stateFlag); err != nil {
			return report(c, err)
		}
	}
	if pos[0] == "mint" && (*sub == "" || (*servers == "" && !*metricsRight)) {
		return usageError(c, fs, "mint needs --sub NAME and --servers a,b (or --servers '*'; a --metrics token may have none)")
	}
	limit, err := rights.ParseRate(*rate)
	if err != nil {
		return usageError(c, fs, "--rate: %v", err)
	}
	bc, err := newBrokerClient(ctx, c, brokerAddr)
	if err != nil {
		return report(c, err)
	}
	var raw []byte
	switch pos[0] {
	case "mint":
		req := wire.TokenRequest{Subject: *sub, TTL: ttl.String(), Rule: rights.Rule{Servers: splitList(*servers), Roots: splitList(*roots),
			Scopes: splitList(*scopes), Tools: splitList(*tools), Admin: *admin, Metrics: *metricsRight, ProjectConfig: *projectConfig, Code: *codeRight, MCPMode: *mcpMode, Rate: limit, Burst: *burst}}
		var m *wire.MintedToken
		if m, raw, err = bc.MintToken(ctx, req); err == nil && !*asJSON {
			fmt.Fprintln(c.stdout, m.Token)
			fmt.Fprintf(c.stderr, "token %s for %s, expires %s; it is shown once: send it as `Authorization: Bearer <token>`\n",
				m.Info.ID, m.Info.Subject, m.Info.ExpiresAt.Local().Format(time.RFC3339))
		}
	case "ls":
		var l *wire.TokenList
		if l, raw, err = bc.Tokens(ctx); err == nil && !*asJSON {
			printTokens(c, l)
		}
	case "revoke":
		var done bool
		if done, raw, err = revokePublic(ctx, c, bc, pos[1], *asJSON); done || err != nil {
			break
		}
		var t *wire.Token
		if t, raw, err = bc.RevokeToken(ctx, pos[1]); err == nil && !*asJSON {
			fmt.Fprintf(c.stdout, "revoked %s (%s)\n", t.ID, t.Subject)
		}
	case "rotate":
		var k *wire.TokenKey
		if k, raw, err = bc.RotateTokenKey(ctx); err == nil && !*asJSON {
			fmt.Fprintf(c.stdout, "new signing key %s; older keys verify their tokens until those expire\n", k.ID)
		}
	}
	if err != nil {
		return report(c, err)
	}
	if *asJSON {
		fmt.Fprintf(c.stdout, "%s\n", strings.TrimRight(string(raw), "\n"))
	}
	return exitOK
}

func printTokens(c *cli, l *wire.TokenList) {
	fmt.Fprintf(c.stdout, "issuer %s\n", l.Identity)
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSUB\tSERVERS\tROOTS\tSCOPES\tTOOLS\tRATE\tADMIN\tEXPIRES\tKEY\tREVOKED\tMINTED BY")
	for _, t := range l.Tokens {
		rules := t.Rights
		if len(rules) == 0 {
			rules = rights.Rights{{Servers: []string{}, Roots: []string{}}}
		}
		// A token of several rules: one line each, the token's own columns
		// on the first.
		for i, e := range rules {
			id, sub, admin, expires, kid, revoked, by := t.ID, t.Subject, yesNo(t.Rights.Admin()), t.ExpiresAt.Local().Format(time.RFC3339), t.KeyID, yesNo(t.Revoked), mintedBy(t.Minter)
			if i > 0 {
				id, sub, admin, expires, kid, revoked, by = "", "", "", "", "", "", ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", id, sub, tokenList(e.Servers),
				tokenList(e.Roots), tokenList(e.Scopes), tokenList(e.Tools), rateOf(e), admin, expires, kid, revoked, by)
		}
	}
	tw.Flush()
	for _, k := range l.Keys {
		if k.Current {
			fmt.Fprintf(c.stdout, "key %s (current, since %s)\n", k.ID, k.Created.Local().Format(time.RFC3339))
		} else {
			fmt.Fprintf(c.stdout, "key %s (retires after %s)\n", k.ID, k.RetiresAfter.Local().Format(time.RFC3339))
		}
	}
}

// mintedBy names a token's minter: "name (via)", with the minting token's
// id for a token minted with a token; "-" when not recorded.
func mintedBy(m *wire.TokenMinter) string {
	switch {
	case m == nil:
		return "-"
	case m.Token != "":
		return fmt.Sprintf("%s (token %s)", m.Name, m.Token)
	}
	return fmt.Sprintf("%s (%s)", m.Name, m.Via)
}

// splitList splits a comma-separated flag; "" is nil.
// tokenList prints a list of a token's rule: nil (no limit) "*", empty "-".
func tokenList(v []string) string {
	if v == nil {
		return "*"
	}
	return orDash(strings.Join(v, ","))
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// rateOf is a rule's rate limit for the token table; "-" for none.
func rateOf(e rights.Rule) string {
	if l := e.Limit(); !l.IsZero() {
		return l.String()
	}
	return "-"
}
