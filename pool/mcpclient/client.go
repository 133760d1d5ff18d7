// Package mcpclient is the broker's MCP client session to one child server:
// JSON-RPC 2.0 over a Transport (newline-delimited stdio or streamable HTTP).
// It passes result bytes through unchanged and multiplexes many concurrent
// callers on one session (each request gets a session-local id).
//
//	s, err := mcpclient.Connect(ctx, mcpclient.NewStdio(stdout, stdin), mcpclient.Options{Root: "/src/app"})
//	res, err := s.CallTool(ctx, "echo", json.RawMessage(`{"message":"hi"}`), nil)
package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
)

// Transport carries whole JSON-RPC messages. Send and Recv may be called
// concurrently with each other; Close unblocks both.
type Transport interface {
	// Send writes one message (no trailing newline).
	Send(ctx context.Context, msg []byte) error
	// Recv returns the next message. It returns an error (io.EOF on clean end)
	// once the peer is gone; after that every call returns an error.
	Recv() ([]byte, error)
	Close() error
}

// Options configure Connect. The zero value is a rootless session offering
// the latest protocol version.
type Options struct {
	ClientName    string // clientInfo.name; "" = "mcpx"
	ClientVersion string // clientInfo.version; "" = "dev"
	// Root is the instance root. Non-empty: declare the roots capability,
	// answer roots/list with [{uri: file://Root, name: base(Root)}] and send
	// rootUri, workspaceFolders and capabilities.workspace.workspaceFolders.
	// Empty: initialize is the rootless one and roots/list answers [].
	Root string
	// Logger receives protocol-level events (nil = discard).
	Logger *slog.Logger
}

// RPCError is a JSON-RPC error the child answered with.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return e.Message }

// ErrClosed is returned (wrapped) by calls on a session whose transport is gone.
var ErrClosed = errors.New("mcp session closed")

// Session is one initialized MCP session. Safe for concurrent use.
type Session struct{}

// Connect performs the initialize handshake and returns a ready session.
func Connect(ctx context.Context, t Transport, opts Options) (*Session, error) { return nil, ErrClosed }
