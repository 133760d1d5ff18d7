package client

import (
	"context"
	"encoding/json"
	"errors"
)

// This file is the whole contract between a Session and its transport:
// what a transport must do (Transport) and what it may do besides
// (Extended, Extras). NewStdio and NewHTTP implement it; a new transport
// (an in-process peer, say) needs nothing that is not written here.

// Transport carries whole JSON-RPC messages between a Session and one peer
// (a child server). These three methods are all a transport must provide:
// one that offers nothing more (TestThirdTransport) gets every feature of
// a Session. What it may offer besides, it returns as Extras (Extended).
//
// Concurrency: a Session calls Recv from one goroutine (its reader) and
// Send from many at once, concurrently with each other and with Recv.
// Close may come from any goroutine at any time, concurrently with both,
// and more than once (the pool closes a transport whose child died while
// Connect still runs). Close unblocks Recv and Send.
type Transport interface {
	// Send writes one message: a JSON-RPC request, notification or
	// response, compact, with no trailing newline. It must not retain msg
	// after it returns. ctx bounds it: when ctx ends first, Send returns
	// ctx's error (or one wrapping ErrBroken, below); the message may have
	// reached the peer or not, and the session follows a request it gave
	// up on with notifications/cancelled.
	//
	// Send returns once msg is handed to the peer (but see
	// Extras.SendWaitsForAnswer). Its error fails only the request it
	// carried, unless the error wraps ErrBroken (the stream is unusable:
	// half a message was written) or ErrSessionExpired (the peer has
	// forgotten the session): then the session ends. A request whose own
	// Send failed with ErrSessionExpired never reached the peer, and its
	// caller's error also matches ErrNotDelivered.
	Send(ctx context.Context, msg []byte) error

	// Recv returns the next message from the peer: one syntactically
	// valid JSON value (an object, or a batch as an array), which the
	// caller owns. Only one goroutine calls Recv.
	//
	// A *TooLargeError says a message over the limit (Extras.SetMaxMessage)
	// was skipped, and Recv may be called again unless it is Unended; the
	// session fails the call it answers. Any other error ends the session, which then calls Recv
	// no more: io.EOF for a clean end, a *ProtocolError for a peer that
	// broke the framing (its Hint from Extras.ViolationHint, if any),
	// anything else for a failure.
	Recv() ([]byte, error)

	// Close ends the transport: a Recv or Send in progress returns, and
	// later calls of either return errors. Calls after the first do
	// nothing more (they may return nil). A stdio transport over a reader
	// that is not an io.Closer cannot cut a blocked read short: its Recv
	// returns once the peer closes its end (Session.Close waits for that).
	Close() error
}

// Extended is a Transport that offers some of Extras. It is the only
// optional interface a Session looks for: Connect asks once, before the
// session's reader starts, and keeps the answer for the session's life.
type Extended interface {
	Transport
	// Extras returns what the transport offers. Connect calls it once,
	// before the first Send or Recv.
	Extras() Extras
}

// Extras is what a transport may do beyond Transport. Every field is
// optional, and its zero value is what a transport that is not Extended
// gets: each field says what its absence means. Unless a field says
// otherwise, its function may be called concurrently with Send, Recv and
// the other functions.
type Extras struct {
	// SetMaxMessage is told the largest message the session accepts from
	// the peer (Options.MaxMessageBytes), once, by Connect, before the
	// first Send or Recv. The transport then never holds a larger message
	// whole: it skips it, keeping its first and last bytes to recover its
	// id and method, and Recv returns a *TooLargeError (stdio skips to the
	// next newline, or gives the stream up, Unended, when the id was in
	// the first bytes and the newline had not come; streamable HTTP skips
	// to the end of the body or SSE event).
	// nil: the transport has its own bound, or none (an in-process peer's
	// messages are in memory already).
	SetMaxMessage func(n int)

	// SendWaitsForAnswer says that Send of a request returns only once the
	// peer has answered it (streamable HTTP answers within the POST), not
	// once the request is written. The session then gives each request's
	// Send a context that it ends, with cause ErrAnswered, as soon as the
	// answer has come through Recv, on whatever stream it came; a Send so
	// ended should return without cutting short what is still to be read,
	// and its error is ignored. false: Send returns once msg is handed
	// over, and the answer is waited for apart from it.
	SendWaitsForAnswer bool

	// RecvRelated, if set, is called by the session's reader instead of
	// Recv, under Recv's contract, and also returns related: the raw JSON
	// id of the session's request on whose answer stream msg came
	// (streamable HTTP: the POST's SSE stream), nil when it came otherwise.
	// A peer's request for input (elicitation, sampling) is then routed to
	// the call it relates to (Session.inputTarget has the rule). nil: Recv,
	// and no message is known to relate to a request.
	RecvRelated func() (msg, related []byte, err error)

	// HoldWrites, if set, waits (until ctx ends) for a write under way to
	// finish and then lets no other start until release is called; ok is
	// false if ctx ended first. A hand-over calls it before it snapshots
	// the session, so that no message is half written when the process is
	// replaced and none is written after the snapshot. nil: each message
	// is sent whole on its own (streamable HTTP), nothing to hold.
	HoldWrites func(ctx context.Context) (release func(), ok bool)

	// OneProcess says every message goes to one peer process over one
	// stream (stdio): a request it has not answered is still pending in
	// it, to be read and answered later. Connect then does not follow a
	// server/discover probe left unanswered with initialize on the same
	// peer, but fails with ErrProbeUnanswered (stateless.open). false:
	// each request is its own exchange (streamable HTTP), and a silent
	// probe falls back to initialize.
	OneProcess bool

	// ViolationHint ends the *ProtocolError of a message that breaks the
	// protocol, telling the peer's author what to fix (stdio: "logs belong
	// on stderr"). "": no hint.
	ViolationHint string

	// SetToolLookup is given, once, by Connect before the first Send, a
	// function that returns a tool's Tool object from the session's cached
	// tools/list (nil when not cached). The function is safe for concurrent
	// use and may be called from Send (streamable HTTP's Mcp-Name and
	// Mcp-Param- headers of the stateless era). nil: the transport needs no
	// tool schemas.
	SetToolLookup func(lookup func(name string) json.RawMessage)

	// SetProtocolVersion is told the protocol version the session speaks,
	// for a transport that carries it outside the messages (streamable
	// HTTP's MCP-Protocol-Version header). Connect calls it with
	// 2026-07-28 before the stateless era's server/discover probe and
	// with "" when the probe fails, and, in the handshake era, with the
	// negotiated version after initialize and before
	// notifications/initialized. nil: the version is only in the messages.
	SetProtocolVersion func(version string)

	// ForgetSession drops whatever session the peer assigned in answer to
	// a failed stateless probe (a streamable HTTP Mcp-Session-Id), so that
	// the next era starts without it. Connect calls it after a failed
	// server/discover probe, before initialize. nil: the transport keeps
	// no session of its own.
	ForgetSession func()

	// OpenStream opens the transport's own stream for the messages the
	// peer sends outside any request (streamable HTTP's GET stream), and
	// returns once it is open, has failed, or a bound passed (ctx, or the
	// transport's own). Connect calls it in the handshake era after
	// SetProtocolVersion and before notifications/initialized, so that a
	// peer that asks something (roots/list) the moment it is initialized
	// finds the stream open. nil: the peer's messages all come through
	// Recv with nothing to open.
	OpenStream func(ctx context.Context)

	// SessionID returns the session the peer assigned to this transport
	// (streamable HTTP's Mcp-Session-Id; "" for none yet, or none at all),
	// for Session.Snapshot. nil: the transport keeps no session of its
	// own.
	SessionID func() string

	// ResumeSession presets the peer's session id, for Restore, before
	// the first Send: the transport goes on in the session another
	// process opened, sending its id on every request, and a peer that
	// has ended it answers as for any expired session (ErrSessionExpired).
	// nil: a snapshot that names a session cannot be restored over this
	// transport.
	ResumeSession func(id string)
}

// extrasOf returns what t offers: its Extras if it is Extended, else none.
func extrasOf(t Transport) Extras {
	if x, ok := t.(Extended); ok {
		return x.Extras()
	}
	return Extras{}
}

// ErrBroken is wrapped by a Send error after which the transport's stream
// is unusable (a failed or partial write left half a message): the session
// ends at once, failing its pending calls.
var ErrBroken = errors.New("transport stream broken")

// ErrAnswered is the cause (context.Cause) of a Send context the session
// ended because the request's answer has arrived
// (Extras.SendWaitsForAnswer).
var ErrAnswered = errors.New("the request was answered")
