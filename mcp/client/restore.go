package client

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
)

// Snapshot is what a session is beyond its transport: what a new process
// needs to go on talking to the same child over the same pipes without a
// second initialize (the daemon's upgrade hands its children over this
// way). It is persisted, in the handoff state file.
type Snapshot struct {
	Era        string          `json:"era"`             // EraHandshake or EraStateless
	Version    string          `json:"protocolVersion"` // the negotiated protocol version
	InitResult json.RawMessage `json:"initializeResult"`
	// NextID is the last request id used: the restored session goes on
	// from it, so that no id the child has seen is used again.
	NextID int64 `json:"nextId"`
	// RootsAnswered: the child's start-up roots/list was answered.
	RootsAnswered bool `json:"rootsAnswered,omitempty"`
	// SessionID is the session a streamable HTTP server assigned at
	// initialize (its Mcp-Session-Id): Restore, over a new HTTP transport
	// to the same endpoint, goes on in it. "" for none (stdio, or a
	// server that keeps no session, as in the stateless era).
	SessionID string `json:"sessionId,omitempty"`
}

// Snapshot returns s's state for Restore. Take it only once no request is
// in flight and none will be sent: a request made after it would reuse an
// id. Seal first makes sure of the second for what the session sends of
// its own (a subscriptions/listen, a cancellation, a ping).
func (s *Session) Snapshot() Snapshot {
	snap := Snapshot{Era: s.Era(), Version: s.version, InitResult: s.initResult, NextID: s.nextID.Load()}
	if s.x.SessionID != nil {
		snap.SessionID = s.x.SessionID()
	}
	select {
	case <-s.rootsAnswered:
		snap.RootsAnswered = true
	default:
	}
	return snap
}

// Restore returns the session snap describes, over t, a transport to the
// same child (its pipes, inherited across exec, or a new streamable HTTP
// transport to the same endpoint): no initialize is sent; the child is
// taken to be where the snapshot left it. The roots it was given are
// opts.Root's, which must be the root the session was opened with. A
// stateless-era session opens its subscriptions/listen stream again (the
// old one died with the old process's reader); a handshake-era one over
// HTTP goes on in snap.SessionID and opens its GET stream again. If the
// server has ended that session, the first request fails with
// ErrSessionExpired (and ErrNotDelivered), as in any expired session.
func Restore(t Transport, opts Options, snap Snapshot) (*Session, error) {
	if snap.Era != EraHandshake && snap.Era != EraStateless {
		t.Close()
		return nil, errors.New("restoring mcp session: unknown era " + snap.Era)
	}
	s := newSession(t, opts)
	if snap.SessionID != "" {
		if s.x.ResumeSession == nil {
			t.Close()
			return nil, errors.New("restoring mcp session: the transport cannot carry on HTTP session " + snap.SessionID)
		}
		s.x.ResumeSession(snap.SessionID)
	}
	s.version, s.initResult = snap.Version, snap.InitResult
	s.instructions = instructionsOf(snap.InitResult)
	s.nextID.Store(snap.NextID)
	if snap.RootsAnswered {
		s.rootsOnce.Do(func() { close(s.rootsAnswered) })
	}
	if snap.Era == EraStateless {
		meta, err := requestMeta(s.opts)
		if err != nil {
			t.Close()
			return nil, err
		}
		s.meta = meta
	}
	if s.x.SetProtocolVersion != nil {
		s.x.SetProtocolVersion(snap.Version)
	}
	go s.read()
	if s.meta != nil {
		s.subscribe()
	} else if s.x.OpenStream != nil {
		// Started, not waited for: unlike at initialize, no request of the
		// peer's is due the moment it is open.
		ctx, cancel := context.WithCancel(s.ctx)
		cancel()
		s.x.OpenStream(ctx)
	}
	return s, nil
}

// newSession is a session over t, its reader not yet started.
func newSession(t Transport, opts Options) *Session {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Session{
		t:             t,
		opts:          opts,
		log:           opts.Logger,
		pending:       make(map[int64]*call),
		done:          make(chan struct{}),
		rootsAnswered: make(chan struct{}),
		rootsAsked:    make(chan struct{}),
		readerDone:    make(chan struct{}),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if opts.MaxMessageBytes <= 0 {
		s.opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	s.x = extrasOf(t)
	if s.x.SetMaxMessage != nil {
		s.x.SetMaxMessage(s.opts.MaxMessageBytes)
	}
	if s.x.SetToolLookup != nil {
		s.x.SetToolLookup(func(name string) json.RawMessage {
			item, _, _ := s.tools.lookup(name)
			return item
		})
	}
	return s
}

// Seal waits (until ctx ends) for a message being written to the peer to
// be written whole, then holds every later one back until unseal: what
// the session sends of its own accord (a subscriptions/listen started at
// Restore, a cancellation, a ping) can then neither be cut in half by the
// process being replaced nor be sent after the Snapshot, reusing an id
// the next image will use. ok is false if ctx ended first (a write
// blocked on a child that does not read). A transport with nothing to
// hold (streamable HTTP) is sealed at once.
func (s *Session) Seal(ctx context.Context) (unseal func(), ok bool) {
	if s.x.HoldWrites == nil {
		return func() {}, true
	}
	return s.x.HoldWrites(ctx)
}
