// Package tsnet is the broker's embedded Tailscale node: it makes the daemon
// reachable over the tailnet, and names each tailnet caller from the
// connection, with the rights of its app-capability grant.
//
//	n := &tsnet.Node{Hostname: "sandbox", Dir: filepath.Join(state, "tailnet"), Logger: log}
//	info, err := n.Up(ctx) // once, bounded by UpTimeout
//	if err != nil { ... }  // e.g. "needs login: open https://login.tailscale.com/a/..."
//	defer n.Close()
//	ln, err := n.Listen() // HTTP on :80, over WireGuard
//	api.Serve(ctx, ln, h, api.ServeOptions{Identify: n.Identify, Host: n.OwnHost})
//	tln, err := n.ListenTLS(ctx) // HTTPS on :443, or nil when no certificate: served the same
//
// # TLS
//
// [Node.ListenTLS] serves HTTPS on :443 only when the tailnet announces
// certificate domains and a certificate for the first one actually comes
// back (asked once, bounded by CertTimeout); otherwise it logs one line and
// the API stays on plain HTTP on :80, which WireGuard already encrypts. A
// tailnet may announce domains it cannot issue (offline, HTTPS disabled),
// so an announcement alone is not trusted.
//
// # The laptop side
//
// A machine without tailscaled reaches a broker through a client node of
// its own: [Node.Dial] connects by MagicDNS name over the tailnet (the CLI's
// --tsnet).
//
// # The fleet and doctor
//
// [Node.Peers] lists the node's peers for package fleet (waiting, bounded,
// until a node just up has its home relay); [Node.Status] is the node's
// state for GET /v1/tailnet: running, starting, needs login (with the
// URL), needs approval, or stopped.
//
// # Identity and rights
//
// [Node.Identify] asks the node's WhoIs about the connection's remote
// address: the caller is the peer's login (or its tags, for a tagged node),
// Via "tailnet", never the owner, never local. Its rights come from the app
// capability [DefaultCapability], each element of the grant one rule
// checked whole (see [Node.Identify]), read afresh on every request, so a
// policy change applies to the next request without a restart. No
// grant, no access: such a peer is refused on every route with a 403
// problem saying so; a WhoIs that fails is refused the same way. Request
// headers (X-Forwarded-For, Tailscale-User-*) are never read. Granted roots
// are canonicalised (symlinks resolved) when the grant is read; the broker
// checks a declared cwd, canonicalised, against them.
//
// # Testing
//
// The package's tests run a whole tailnet in the test process: tailscale's
// test control server, DERP and STUN on loopback, and real nodes. They need
// no root, no TUN device and no internet.
//
// It alone (with cmd) links tailscale.com, so the rest of the tree builds
// and tests without tsnet's 5-minute cold build.
//
// A request carrying a bearer token is not asked about: api reads it as a
// signed token (package auth) with the token's rights. [Node.OwnHost] is
// every listener's api.ServeOptions.Host (HTTP on :80 and HTTPS on :443
// alike), the browser guard's DNS-rebinding check.

package tsnet
