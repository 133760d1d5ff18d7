package api

import (
	"context"
	"net"
)

// peer is the identity of a unix-socket connection, read once at accept.
type peer struct {
	uid int
	pid int   // the connecting process; Mcpx-Pid must name it or an ancestor
	err error // the credentials could not be read: refuse the caller
	// nested: the connecting process lives in another user namespace than
	// the daemon's (a confined child); nsErr: that could not be read.
	nested bool
	nsErr  error
}

type peerKey struct{}

// ConnContext is an http.Server.ConnContext that records the kernel-reported
// credentials (SO_PEERCRED) of unix-socket connections, which the handler
// from New requires to admit unix-socket callers. Other connections pass
// through untouched and are judged by their remote address.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	for range 4 { // Serve's guardedConn, a daemon's connection kept across an upgrade
		w, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = w.NetConn()
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	var p peer
	p.uid, p.pid, p.err = peerCred(uc)
	if p.err == nil {
		p.nested, p.nsErr = otherUserNS(p.pid)
	}
	return context.WithValue(ctx, peerKey{}, p)
}

func peerFrom(ctx context.Context) (peer, bool) {
	p, ok := ctx.Value(peerKey{}).(peer)
	return p, ok
}

// maxAncestors bounds the walk up from a peer to the pid it declares. Real
// chains are short (a shell, an agent, a wrapper or two); the bound keeps a
// lookup cheap whatever the process tree looks like.
const maxAncestors = 32

// vouchesFor reports whether the peer may declare pid as the process whose
// lifetime scopes its calls: its own pid or one of its ancestors' (the CLI
// sends its parent shell's). Naming any other process would let a caller
// attach instances to processes it has nothing to do with.
func (p peer) vouchesFor(pid int) bool {
	cur := p.pid
	for range maxAncestors {
		if cur == pid {
			return true
		}
		if cur <= 1 {
			return false
		}
		next, err := parentOf(cur)
		if err != nil || next == cur {
			return false
		}
		cur = next
	}
	return false
}
