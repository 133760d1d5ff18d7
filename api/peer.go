package api

import (
	"context"
	"net"
)

// peer is the identity of a unix-socket connection, read once at accept.
type peer struct {
	uid int
	err error // the credentials could not be read: refuse the caller
}

type peerKey struct{}

// ConnContext is an http.Server.ConnContext that records the kernel-reported
// credentials (SO_PEERCRED) of unix-socket connections, which the handler
// from New requires to admit unix-socket callers. Other connections pass
// through untouched and are judged by their remote address.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	var p peer
	p.uid, p.err = peerCred(uc)
	return context.WithValue(ctx, peerKey{}, p)
}

func peerFrom(ctx context.Context) (peer, bool) {
	p, ok := ctx.Value(peerKey{}).(peer)
	return p, ok
}
