package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// An era is one way of opening a session with a child: the stateless
// 2026-07-28 revision (server/discover, per-request _meta, no initialize;
// stateless.go) and the initialize handshake spoken by protocol versions
// 2024-11-05 … 2025-11-25. Connect tries them in order (eraOrder): a stdio
// child is probed with server/discover first, and initialized on a
// non-modern answer.
type era interface {
	// name is EraStateless or EraHandshake.
	name() string
	// versions this era speaks, newest first; versions()[0] is offered.
	versions() []string
	// open establishes the session on s (whose reader is running) and
	// returns the negotiated version and the child's raw answer.
	open(ctx context.Context, s *Session) (version string, result json.RawMessage, err error)
}

// eras are all eras, newest first.
var eras = []era{stateless{}, handshake{}}

// eraOrder is the order Connect tries eras in: the era remembered for the
// child's definition (Options.Era) first, then the other. A streamable
// HTTP child is probed the same way: a server of the handshake era
// refuses the sessionless server/discover with an HTTP error (which falls
// back, see fallsBack) or answers it without 2026-07-28.
func eraOrder(hint string) []era {
	if hint == EraHandshake {
		return []era{handshake{}, stateless{}}
	}
	return eras
}

// fallsBack reports whether era e's failure to open means the child may be
// of another era. The probe falls back on any answer that is not a
// stateless one (a JSON-RPC error, a result without 2026-07-28), and on an
// HTTP server's silence, never on a stdio child's (ErrProbeUnanswered: the
// caller opens a fresh child, see stateless.open); initialize, tried first for a definition remembered as
// of the handshake era, falls back only on a JSON-RPC error (a child now
// of the stateless era alone refuses it): a child that answered with a
// version mcpx does not speak is refused. A dead child, a broken protocol
// or the end of ctx fail the start.
func fallsBack(ctx context.Context, e era, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return true
	}
	// Over HTTP a server refuses a request of the other era with a
	// client-error status: a handshake-era one the sessionless probe
	// (400 "not initialized", 404, 405), a stateless-only one initialize
	// (400 with a JSON-RPC error). A failed probe falls back on a server
	// error too: a handshake-era server that has never seen the method
	// may fail it, and initialize then says what is wrong, if anything.
	// Authentication failures are not the era's: the other era would get
	// the same answer.
	var he *HTTPStatusError
	if errors.As(err, &he) && he.StatusCode != 401 && he.StatusCode != 403 &&
		(he.StatusCode/100 == 4 || e.name() == EraStateless && he.StatusCode/100 == 5) {
		return true
	}
	var ee *eraError
	return e.name() == EraStateless && errors.As(err, &ee)
}

// handshake is the initialize-handshake era (spec: basic/lifecycle).
type handshake struct{}

func (handshake) name() string { return EraHandshake }

func (handshake) versions() []string { return jsonrpc.HandshakeVersions() }

// open implements the initialization phase.
//
// Spec (basic/lifecycle#initialization): "The client MUST initiate this phase
// by sending an initialize request containing: Protocol version supported,
// Client capabilities, Client implementation information." … "After
// successful initialization, the client MUST send an initialized notification
// to indicate it is ready to begin normal operations."
//
// Spec (basic/lifecycle#version-negotiation): "In the initialize request, the
// client MUST send a protocol version it supports. This SHOULD be the latest
// version supported by the client. If the server supports the requested
// protocol version, it MUST respond with the same version. Otherwise, the
// server MUST respond with another protocol version it supports. […] If the
// client does not support the version in the server's response, it SHOULD
// disconnect."
func (h handshake) open(ctx context.Context, s *Session) (string, json.RawMessage, error) {
	versions := h.versions()
	params, err := initializeParams(versions[0], s.opts)
	if err != nil {
		return "", nil, err
	}
	// Spec: "The initialize request MUST NOT be part of a JSON-RPC batch"
	// and "initialize […] MUST NOT be cancelled by clients": request with
	// cancel=false sends no notifications/cancelled when ctx ends.
	res, err := s.request(ctx, jsonrpc.MethodInitialize, params, nil, false)
	if err != nil {
		return "", nil, err
	}
	var head struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(res, &head); err != nil {
		return "", nil, fmt.Errorf("decoding initialize result: %w", err)
	}
	if !slices.Contains(versions, head.ProtocolVersion) {
		return "", nil, &eraError{fmt.Sprintf("child answered protocol version %q; mcpx speaks %s",
			head.ProtocolVersion, strings.Join(jsonrpc.SupportedVersions(), ", "))}
	}
	// Spec (basic/transports#protocol-version-header): the client MUST send
	// MCP-Protocol-Version on all subsequent HTTP requests, the initialized
	// notification included.
	if s.x.SetProtocolVersion != nil {
		s.x.SetProtocolVersion(head.ProtocolVersion)
	}
	if s.x.OpenStream != nil {
		s.x.OpenStream(ctx)
	}
	if err := s.notify(ctx, jsonrpc.MethodInitialized, nil); err != nil {
		return "", nil, fmt.Errorf("sending notifications/initialized: %w", err)
	}
	return head.ProtocolVersion, res, nil
}
