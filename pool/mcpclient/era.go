package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// An era is one way of opening a session with a child. Today there is one:
// the initialize handshake spoken by protocol versions 2024-11-05 …
// 2025-11-25. The stateless 2026-07-28 revision (server/discover, per-request
// _meta, no initialize) becomes a second era, listed first in eras: its open
// probes server/discover and Connect falls back to the handshake era on a
// non-modern error.
type era interface {
	// versions this era speaks, newest first; versions()[0] is offered.
	versions() []string
	// open establishes the session on s (whose reader is running) and
	// returns the negotiated version and the child's raw answer.
	open(ctx context.Context, s *Session) (version string, result json.RawMessage, err error)
}

// eras are tried in order by Connect.
var eras = []era{handshake{}}

// SupportedVersions returns the protocol versions mcpx speaks, newest first.
func SupportedVersions() []string {
	var vs []string
	for _, e := range eras {
		vs = append(vs, e.versions()...)
	}
	return vs
}

// handshake is the initialize-handshake era (spec: basic/lifecycle).
type handshake struct{}

func (handshake) versions() []string {
	return []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
}

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
	res, err := s.request(ctx, "initialize", params, nil, false)
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
		return "", nil, fmt.Errorf("child answered protocol version %q; mcpx speaks %s",
			head.ProtocolVersion, strings.Join(SupportedVersions(), ", "))
	}
	// Spec (basic/transports#protocol-version-header): the client MUST send
	// MCP-Protocol-Version on all subsequent HTTP requests, the initialized
	// notification included.
	if v, ok := s.t.(ProtocolVersionSetter); ok {
		v.SetProtocolVersion(head.ProtocolVersion)
	}
	if err := s.notify(ctx, "notifications/initialized", nil); err != nil {
		return "", nil, fmt.Errorf("sending notifications/initialized: %w", err)
	}
	return head.ProtocolVersion, res, nil
}

// ProtocolVersionSetter is implemented by transports that must know the
// negotiated protocol version (streamable HTTP sends it as the
// MCP-Protocol-Version header). Connect calls it once, after negotiation and
// before notifications/initialized.
type ProtocolVersionSetter interface {
	SetProtocolVersion(version string)
}
