// Package mcp is mcpx as an MCP server: the broker's servers offered
// to MCP clients over Streamable HTTP (package api mounts it at /mcp and
// /mcp/{server}) in both protocol eras — the 2025-11-25 sessions
// (initialize, Mcp-Session-Id, the GET stream, DELETE, resumable SSE) and
// the stateless 2026-07-28 revision (server/discover, _meta, input_required
// rounds).
//
// /mcp aggregates every server the caller may use: tools and prompts are
// named <server>__<name> (names.go), resources keep their URIs and are
// routed back to the server that listed them. /mcp/{server} is one server
// with its names unchanged.
//
// The client's roots become the caller's cwd (its first root the caller's
// rights allow), so one URL gives each worktree its own child; the MCP
// session becomes the caller's session. A child's requests for input go to
// the client whose call caused them; its notifications reach the sessions
// that use it.
//
// Results pass through as the child sent them: the package rewrites only
// the members it must (a tool's name, a progress token), never re-encoding
// a whole message. It uses no MCP SDK on the server side for that reason:
// the official go-sdk's server decodes every result into its own types.
package mcp

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"mcpx.dev/mcpx/broker"
)

// Defaults for zero Options.
const (
	DefaultIdleTimeout = 30 * time.Minute
	DefaultResumeGrace = 30 * time.Second
	DefaultInputWait   = 10 * time.Minute
	DefaultRootsWait   = 10 * time.Second
)

// Options configure New.
type Options struct {
	Broker  *broker.Broker // required
	Logger  *slog.Logger   // nil = discard
	Version string         // serverInfo.version; "" = "dev"
	// IdleTimeout ends a session that has had no request for this long
	// (an open GET stream does not count: a client that stopped calling
	// is gone). 0 = DefaultIdleTimeout.
	IdleTimeout time.Duration
	// ResumeGrace is how long a call whose SSE answer lost its connection
	// keeps running for the client to resume it (GET with Last-Event-ID);
	// then it is cancelled. Also how long a session whose GET stream
	// closed waits for the client's next word. 0 = DefaultResumeGrace.
	ResumeGrace time.Duration
	// InputWait bounds the wait for the client's answer to a child's
	// request for input. 0 = DefaultInputWait.
	InputWait time.Duration
	// RootsWait bounds the wait for the client's answer to roots/list.
	// 0 = DefaultRootsWait.
	RootsWait time.Duration
}

// Server holds the sessions of the MCP endpoint. Close ends them.
type Server struct {
	b       *broker.Broker
	log     *slog.Logger
	version string
	opts    Options

	ctx    context.Context // the sessions' calls run on it
	cancel context.CancelFunc
	wg     sync.WaitGroup // the janitor and every session's goroutines

	mu       sync.Mutex
	sessions map[string]*session
	closed   bool

	stopNotices func()
	listeners   map[*listener]bool // open subscriptions/listen requests
	parked      parkedCalls        // stateless calls waiting for input (stateless.go)
	code        Code               // code mode's tools; nil = none (code.go)
}

// listener is one open subscriptions/listen: the list changes it wants go
// on its stream.
type listener struct {
	ss   *session
	st   *stream
	want map[string]bool
	meta json.RawMessage // {subscriptionId}
}

// notify sends a list change on the listen stream, tagged with its
// subscription id (SEP-2575).
func (l *listener) notify(method string) {
	l.ss.notify(l.st, method, object{}.set("_meta", l.meta))
}

func (s *Server) addListener(l *listener) (stop func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listeners == nil {
		s.listeners = map[*listener]bool{}
	}
	s.listeners[l] = true
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.listeners, l)
	}
}

// New returns a Server; it watches the broker's notices until Close.
func New(opts Options) *Server {
	s := &Server{
		b:        opts.Broker,
		log:      cmp.Or(opts.Logger, slog.New(slog.DiscardHandler)),
		version:  cmp.Or(opts.Version, "dev"),
		sessions: map[string]*session{},
	}
	opts.IdleTimeout = cmp.Or(opts.IdleTimeout, DefaultIdleTimeout)
	opts.ResumeGrace = cmp.Or(opts.ResumeGrace, DefaultResumeGrace)
	opts.InputWait = cmp.Or(opts.InputWait, DefaultInputWait)
	opts.RootsWait = cmp.Or(opts.RootsWait, DefaultRootsWait)
	s.opts = opts
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.stopNotices = s.b.WatchNotices(s.notice)
	s.wg.Go(s.janitor)
	return s
}

// Close ends every session (stopping their session-scoped children) and
// waits for their goroutines, at most until ctx is done.
func (s *Server) Close(ctx context.Context) error {
	s.stopNotices()
	s.mu.Lock()
	s.closed = true
	all := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	for _, ss := range all {
		s.end(ctx, ss, "the daemon is stopping")
	}
	s.cancel()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Sessions is how many sessions are open.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// newID draws a session id: 128 random bits, visible ASCII as the
// specification asks.
func newID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// MaxSessionsPerCaller bounds the sessions one caller may hold open: a
// client that initializes in a loop cannot exhaust the daemon's memory.
const MaxSessionsPerCaller = 1024

// errTooMany refuses a session over MaxSessionsPerCaller.
var errTooMany = errors.New("too many open MCP sessions")

func (s *Server) add(ss *session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	n := 0
	for _, o := range s.sessions {
		if o.caller.Name == ss.caller.Name && o.caller.Via == ss.caller.Via {
			n++
		}
	}
	if n >= MaxSessionsPerCaller {
		return errTooMany
	}
	s.sessions[ss.id] = ss
	return nil
}

// errClosed refuses a session while the daemon stops.
var errClosed = errors.New("the daemon is stopping")

// lookup finds the session id of req: a session belongs to the caller
// that opened it and to the path it was opened on (/mcp or one server's),
// and on any other it does not exist.
func (s *Server) lookup(id string, req Request) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	if ss == nil || ss.caller.Name != req.Caller.Name || ss.caller.Via != req.Caller.Via || ss.server != req.Server {
		return nil
	}
	if ss.restored {
		s.bind(ss, req.Caller)
	}
	return ss
}

// end removes ss, cancels its calls and stops its session-scoped children.
func (s *Server) end(ctx context.Context, ss *session, why string) {
	s.mu.Lock()
	_, ok := s.sessions[ss.id]
	delete(s.sessions, ss.id)
	s.mu.Unlock()
	if !ok {
		return
	}
	ss.close()
	s.log.Debug("mcp session ended", "session", ss.id, "caller", ss.caller.Name, "why", why)
	if ss.ownSession {
		if err := s.b.EndSession(ctx, ss.caller, ss.sessionID()); err != nil {
			s.log.Warn("stopping an mcp session's children", "session", ss.id, "err", err)
		}
	}
}

// janitor ends idle sessions.
func (s *Server) janitor() {
	tick := time.NewTicker(cmp.Or(min(s.opts.IdleTimeout/4, s.opts.ResumeGrace/2), time.Second))
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-tick.C:
			s.dropParked(now, s.opts.InputWait)
			s.mu.Lock()
			var idle []*session
			for _, ss := range s.sessions {
				if why := ss.expired(now, s.opts.IdleTimeout, s.opts.ResumeGrace); why != "" {
					idle = append(idle, ss)
					ss.endWhy = why
				}
			}
			s.mu.Unlock()
			for _, ss := range idle {
				ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
				s.end(ctx, ss, ss.endWhy)
				cancel()
			}
		}
	}
}

// notice passes a child's notification on to the sessions that use it. It
// runs on the child's reader: each session queues it without blocking.
func (s *Server) notice(n broker.Notice) {
	s.mu.Lock()
	all := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	var ls []*listener
	for l := range s.listeners {
		ls = append(ls, l)
	}
	s.mu.Unlock()
	for _, ss := range all {
		ss.notice(n)
	}
	for _, l := range ls {
		if n.Method == broker.NoticeReload {
			for m := range l.want {
				l.notify(m)
			}
		} else if l.want[n.Method] && l.ss.caller.Rights.MayUse(n.Server) {
			l.notify(n.Method)
		}
	}
}
