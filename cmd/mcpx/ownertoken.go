package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"text/tabwriter"
	"time"

	"mcpx.dev/mcpx/auth/owner"
)

// ownerTokens are the owner tokens of the daemon whose state directory is
// state ("" = the default one): its auth directory, where the daemon
// looks for them.
func ownerTokens(c *cli, state string) (*owner.Tokens, error) {
	if state == "" {
		var err error
		if state, err = stateDir(c.getenv); err != nil {
			return nil, err
		}
	}
	return owner.Open(filepath.Join(state, "auth")), nil
}

// addOwnerToken is `mcpx token add NAME`: the secret on stdout, once.
func addOwnerToken(c *cli, ts *owner.Tokens, name string, asJSON bool) int {
	secret, info, err := ts.Add(name)
	if err != nil {
		return report(c, err)
	}
	if asJSON {
		b, _ := json.Marshal(struct {
			Token string `json:"token"`
			owner.Info
		}{secret, info})
		fmt.Fprintf(c.stdout, "%s\n", b)
		return exitOK
	}
	fmt.Fprintln(c.stdout, secret)
	fmt.Fprintf(c.stderr, "owner token %s: it admits its bearer on the daemon's loopback TCP as you, with every right, until `mcpx token revoke %s`; "+
		"it is shown once and survives restarts and upgrades: send it as `Authorization: Bearer <token>`\n", info.Name, info.Name)
	return exitOK
}

// printOwnerTokens is `mcpx token ls`'s first table (none: nothing).
func printOwnerTokens(c *cli, ts *owner.Tokens) error {
	l, err := ts.List()
	if err != nil || len(l) == 0 {
		return err
	}
	fmt.Fprintln(c.stdout, "owner tokens (loopback TCP, this machine)")
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCREATED\tLAST USED")
	for _, t := range l {
		used := "never"
		if !t.LastUsed.IsZero() {
			used = t.LastUsed.Local().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, t.Created.Local().Format(time.RFC3339), used)
	}
	tw.Flush()
	fmt.Fprintln(c.stdout)
	return nil
}
