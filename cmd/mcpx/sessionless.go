package main

import (
	"context"
	"fmt"
	"strings"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/wire"
)

// A server scoped to the session (or parent session) that is called with
// neither falls to a child of its own for that one call (broker.Resolver):
// what it keeps between calls (sequential-thinking's history) is lost every
// time. The broker answers the call all the same; these say so.

// sessionScoped reports whether scope is a scope kind keyed by a session.
func sessionScoped(scope string) bool {
	return scope == "session" || scope == "parent-session"
}

// noSession reports whether caller declares no session of any kind, nor a
// scope of its own.
func noSession(caller client.Caller) bool {
	return caller.Session == "" && caller.ParentSession == "" && caller.Scope == ""
}

// warnSessionless prints one line on stderr when server is session-scoped
// and caller has no session. A server the daemon does not describe (a
// project config's, or an error) is not warned about.
func warnSessionless(ctx context.Context, c *cli, bc *client.Client, caller client.Caller, server string) {
	if !noSession(caller) {
		return
	}
	s, _, err := bc.Server(ctx, server)
	if err != nil || !sessionScoped(s.Scope) {
		return
	}
	fmt.Fprintf(c.stderr, "mcpx: server %s is %s-scoped and this call had no session ($MCPX_SESSION_ID or --session): it ran in a new child that keeps nothing for the next call\n", server, s.Scope)
}

// printSessionless is status's note: the session-scoped servers, when the
// caller running status has no session (as its calls would not).
func printSessionless(c *cli, caller client.Caller, servers []wire.Server) {
	if !noSession(caller) {
		return
	}
	var names []string
	for _, s := range servers {
		if sessionScoped(s.Scope) {
			names = append(names, s.Name)
		}
	}
	if len(names) > 0 {
		fmt.Fprintf(c.stdout, "no session here ($MCPX_SESSION_ID unset): each call of the session-scoped %s starts a new child that keeps nothing (`mcpx install` sets the session for a harness)\n", strings.Join(names, ", "))
	}
}
