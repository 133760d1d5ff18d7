package broker

import (
	"context"
	"encoding/json"
	"log/slog"

	"mcpx.dev/mcpx/pool"
)

// Caller is who is calling, as the API layer authenticated it.
type Caller struct {
	Name  string `json:"name"`          // login name, node name or "local:uid"
	Via   string `json:"via"`           // "unix", "tcp-loopback", "tailnet", "jwt"
	Uid   int    `json:"uid,omitempty"` // unix callers
	Local bool   `json:"local"`         // same machine (unix socket): Mcpx-Pid is trusted
	Admin bool   `json:"admin"`         // may stop instances, manage sessions
	// Servers and Roots restrict what the caller may name; nil = everything
	// (local callers). Empty non-nil = nothing.
	Servers []string `json:"servers,omitempty"`
	Roots   []string `json:"roots,omitempty"`
}

// Request is one call-like request: who, where, and which server.
type Request struct {
	Caller  Caller
	Context CallContext
	Server  string
}

// ServerInfo describes a configured server to callers.
type ServerInfo struct {
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Tags        []string  `json:"tags,omitempty"`
	Transport   string    `json:"transport"` // "stdio" or "http"
	Scope       ScopeKind `json:"scope"`
	Sharing     Sharing   `json:"sharing"`
	Max         int       `json:"max"`
	Instances   int       `json:"instances"` // running now
}

// Instance is a pooled child, as status shows it.
type Instance = pool.InstanceStatus

// Options configures a Broker.
type Options struct {
	Config *Config      // required
	Logger *slog.Logger // nil = discard
	Self   string       // path of the mcpx binary, for the built-in demo server
}

// Broker maps callers to scoped instances and forwards their calls.
// All methods are safe for concurrent use.
type Broker struct {
	opts Options
}

// New builds a broker. It starts no children; Close stops them.
func New(opts Options) (*Broker, error) { return &Broker{opts: opts}, nil }

// Servers lists the configured servers, sorted by name.
func (b *Broker) Servers() []ServerInfo { return nil }

// Server describes one server; KindNotFound if there is none by that name.
func (b *Broker) Server(name string) (ServerInfo, error) { return ServerInfo{}, errNotImplemented }

// Tools returns the server's tools as the child listed them (all pages
// joined): a JSON array of MCP Tool objects.
func (b *Broker) Tools(ctx context.Context, r Request) (json.RawMessage, error) {
	return nil, errNotImplemented
}

// CallTool calls tool with args (a JSON object; nil = {}) and returns the
// child's CallToolResult bytes unchanged. onProgress, if non-nil, receives the
// params of each notifications/progress the child sends for this call.
// Cancelling ctx sends notifications/cancelled to the child.
func (b *Broker) CallTool(ctx context.Context, r Request, tool string, args json.RawMessage, onProgress func(json.RawMessage)) (json.RawMessage, error) {
	return nil, errNotImplemented
}

// Resources returns the server's resources: a JSON array of MCP Resource objects.
func (b *Broker) Resources(ctx context.Context, r Request) (json.RawMessage, error) {
	return nil, errNotImplemented
}

// ReadResource returns the child's resources/read result for uri.
func (b *Broker) ReadResource(ctx context.Context, r Request, uri string) (json.RawMessage, error) {
	return nil, errNotImplemented
}

// Prompts returns the server's prompts: a JSON array of MCP Prompt objects.
func (b *Broker) Prompts(ctx context.Context, r Request) (json.RawMessage, error) {
	return nil, errNotImplemented
}

// GetPrompt returns the child's prompts/get result.
func (b *Broker) GetPrompt(ctx context.Context, r Request, name string, args map[string]string) (json.RawMessage, error) {
	return nil, errNotImplemented
}

// Instances lists the pooled children, sorted by server then key.
func (b *Broker) Instances() []Instance { return nil }

// StopInstance stops one instance by ID after draining its calls.
// KindNotFound if there is none.
func (b *Broker) StopInstance(ctx context.Context, id string) error { return errNotImplemented }

// Close stops accepting calls, drains in-flight calls until ctx is done, and
// stops every child.
func (b *Broker) Close(ctx context.Context) error { return nil }
