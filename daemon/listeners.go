package daemon

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/internal/atomicfile"
)

// Listeners are the daemon's listeners, each with how it is served. They
// are opened one by one as the daemon starts; until Actors hands them to
// their serving actors, the set owns them, and Close closes every one: a
// start that fails half-way leaves nothing open (the model is tsnet's
// closeOnErrorPool). The zero value is an empty set.
//
//	var lns daemon.Listeners
//	defer lns.Close() // a failed start: what was opened; after Actors, nothing
//	if err := lns.Local(sock, addr, opts, maxConns); err != nil { return err }
//	…                 // later steps, which may fail
//	for _, a := range lns.Actors(h) { g.Add(a.Execute, a.Interrupt) }
type Listeners struct {
	// State is the daemon's state directory, where a loopback listener of
	// port 0 remembers the port it got (Local); "" = nowhere.
	State string

	list   []listener
	handed bool        // Actors has handed the listeners over
	keep   atomic.Bool // an upgrade: the actors stop accepting but leave the sockets open (handlisteners.go)
}

type listener struct {
	ln   net.Listener
	opts api.ServeOptions
	h    http.Handler // its own handler (the public face's); nil = the one Actors is given
	// inherited are the idle connections a predecessor handed over, and
	// served what Actors serves ln as (handlisteners.go).
	inherited []net.Conn
	served    net.Listener
}

// Add adds ln, to be served with opts. A nil ln is skipped (the tailnet's
// HTTPS listener when there is no certificate).
func (s *Listeners) Add(ln net.Listener, opts api.ServeOptions) {
	if ln != nil {
		s.list = append(s.list, listener{ln: ln, opts: opts})
	}
}

// AddPublic adds ln, the public face's listener (docs/public.md), to be
// served with opts and h, the public face's own handler, never the
// daemon's. An upgrade never hands it to the next image (whose loopback
// listener could otherwise adopt it): it is closed when the drain begins,
// and the next image listens again, so its clients retry for a moment.
func (s *Listeners) AddPublic(ln net.Listener, opts api.ServeOptions, h http.Handler) {
	if ln != nil {
		s.list = append(s.list, listener{ln: notHanded{ln}, opts: opts, h: h})
	}
}

// notHanded hides a listener's socket from an upgrade's hand-over.
type notHanded struct{ net.Listener }

// Local opens the unix socket at sock, served with opts, and, if addr is
// not "", the loopback TCP listener at addr, served with opts and at most
// maxConns connections at once. It returns the TCP listener (nil without
// addr).
//
// A port-0 addr first tries the port the last daemon of s.State got, so
// that a client entry written with that address (`mcpx install <client>
// --http`, with its owner token) outlives a restart; another free port
// when that one is taken.
func (s *Listeners) Local(sock, addr string, opts api.ServeOptions, maxConns int) (net.Listener, error) {
	uln, err := api.ListenUnix(sock)
	if err != nil {
		return nil, err
	}
	s.Add(uln, opts)
	if addr == "" {
		return nil, nil
	}
	tln, err := listenSticky(s.State, addr)
	if err != nil {
		return nil, fmt.Errorf("--listen: %w", err)
	}
	opts.MaxConns = maxConns
	s.Add(tln, opts)
	return tln, nil
}

// Close closes the listeners the set still owns: all of them, unless
// Actors has handed them over.
func (s *Listeners) Close() {
	if s.handed {
		return
	}
	for _, l := range s.list {
		l.ln.Close()
	}
	s.list = nil
}

// Actor is a run group actor (github.com/oklog/run): Execute runs until
// Interrupt is called, and returns.
type Actor struct {
	Execute   func() error
	Interrupt func(error)
}

// Actors hands the listeners to one actor each, which serves h on it
// (api.Serve) until interrupted; then it stops accepting and drains the
// requests in flight (bounded by the listener's DrainTimeout) before it
// returns, so that the group returns only once every listener has
// drained. api.Serve closes the listener.
func (s *Listeners) Actors(h http.Handler) []Actor {
	s.handed = true
	out := make([]Actor, 0, len(s.list))
	for i, l := range s.list {
		ctx, cancel := context.WithCancel(context.Background())
		s.list[i].served = keepable(l.ln, &s.keep, l.inherited)
		lh := h
		if l.h != nil {
			lh = l.h
		}
		out = append(out, Actor{
			Execute:   func() error { return api.Serve(ctx, s.list[i].served, lh, uncapped(l)) },
			Interrupt: func(error) { cancel() },
		})
	}
	return out
}

// stickyFile is where, in the state directory, a port-0 loopback listener
// remembers its port.
const stickyFile = "loopback-port"

// listenSticky listens on addr; for port 0, on the port remembered in
// state first (see Local), then remembers the one it got.
func listenSticky(state, addr string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port != "0" || state == "" {
		return api.ListenLoopback(addr)
	}
	file := filepath.Join(state, stickyFile)
	if b, err := os.ReadFile(file); err == nil {
		if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && p > 0 && p < 65536 {
			if ln, err := api.ListenLoopback(net.JoinHostPort(host, strconv.Itoa(p))); err == nil {
				return ln, nil
			}
		}
	}
	ln, err := api.ListenLoopback(addr)
	if err != nil {
		return nil, err
	}
	if _, p, err := net.SplitHostPort(ln.Addr().String()); err == nil {
		atomicfile.Write(file, []byte(p+"\n"), 0o600) //nolint:errcheck // a port not remembered: the next daemon gets another
	}
	return ln, nil
}
