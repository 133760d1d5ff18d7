// Package egress is the daemon's egress proxy: the one way out of a
// confined child's network namespace. A child whose sandbox policy lists
// hosts gets HTTPS_PROXY and HTTP_PROXY pointing at a listener on its own
// loopback; its helper passes that listener to the daemon, which serves it
// here under the instance's allowlist:
//
//	p := egress.New(egress.Options{Logger: log})
//	defer p.Close()
//	s, err := p.Serve(ln, egress.Binding{
//		Server:   "github",
//		Instance: "github-3",
//		Allow:    []string{"api.github.com", "*.githubusercontent.com"},
//	})
//	// ... when the instance stops:
//	s.Close()
//
// # What a child may do
//
// Send CONNECT host:port (HTTPS, or anything over TCP) or a request for an
// absolute http:// URI, for a host its allowlist names, on a port it allows
// (443 and 80 unless an entry names one: see [ParseAllow]). An IP address
// is reached only when the allowlist lists it. The proxy resolves names
// itself, with Options.Resolver, and connects only to the addresses it
// resolved: a name that resolves to this machine (loopback, any address of
// its interfaces, which covers every listener of the daemon's), a link-local
// address, a private or carrier-NAT network (the LAN, a tailnet), multicast
// or reserved space is refused unless the allowlist lists that address
// itself — so DNS rebinding cannot turn an allowed name into a path to
// 127.0.0.1. Options.Permit and Options.Refuse move that line for a daemon.
//
// Every refusal is answered 403 (400 for what is not a proxy request,
// 503 past the connection limit) with a body saying why, logged with the
// server, instance, host, port and reason, and counted ([Proxy.Counts]).
// Proxy-Authorization and the other hop-by-hop headers never reach an
// upstream; the Host header of an absolute-URI request is replaced by the
// URI's (RFC 9112, section 3.2.2), so it cannot smuggle a request to
// another host. Plain-HTTP upgrades (WebSocket over ws://) are not relayed:
// clients tunnel those with CONNECT.
//
// # Bounds
//
// Per binding: Options.MaxConns connections from the child at once. Per
// connection: Options.HeaderTimeout and Options.MaxHeaderBytes for a
// request header (net/http answers 431 or closes), Options.DialTimeout to
// resolve and connect, Options.IdleTimeout without a byte either way on a
// tunnel or an upstream. Answers net/http gives on its own (a malformed
// request, a header too large or too slow) are not counted as refusals:
// they are not the policy's.
//
// # Lifetime
//
// [Served.Close] closes one binding's listener and connections;
// [Proxy.Close] closes all of them. Both return only when every goroutine
// they started has returned (net/http's own goroutine for a connection ends
// just after the connection does).
//
// # Why the standard library
//
// net/http's server parses requests, enforces the header limits and lets a
// CONNECT handler hijack the connection; httputil.ReverseProxy forwards
// plain HTTP with the hop-by-hop rules right. What is left — the allowlist,
// the address checks, a tunnel with an idle timeout, the bookkeeping for
// Close — is this package's own policy and would be the same on top of a
// library. github.com/elazarl/goproxy was the alternative: it adds MITM
// and request-rewriting machinery this proxy must never use, and its
// handlers would still need all of the above.
package egress
