// Package tsnet will be the embedded Tailscale node that makes the broker
// reachable over the tailnet: its state dir, auth key, control URL, listeners,
// and the WhoIs lookup that turns a tailnet peer into a broker.Caller with
// the rights of its app-capability grant.
//
// TODO(2026-11-30, issue 7 "Reachable over the tailnet"): not built yet. The
// package exists now so that its dependency rules bind from its first line.
// It alone (with cmd) links tailscale.com, so the rest of the tree builds and
// tests without tsnet's 5-minute cold build.
package tsnet
