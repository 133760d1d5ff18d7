// Package adapter is what a namespace that is not an MCP child implements
// to take a child's place in the pool: an OpenAPI service (package
// adapter/openapi), a set of command lines (adapter/cli).
//
// A namespace lists tools with their JSON Schemas and calls one, with
// progress and cancellation; it may list and read resources. The pool runs
// an adapter's instance exactly as it runs a child's — one instance per
// (server, scope key), with the scope's root — and talks to it through
// Transport, an in-process MCP server over the Namespace, so every surface
// above the pool (scopes, rights, records, metrics, OpenAPI documents, the
// TypeScript client, the catalog, search, the MCP endpoint) serves an
// adapter's tools with no code of its own for them.
//
// The package is a leaf: the standard library only.
package adapter

import (
	"context"
	"encoding/json"
	"os/exec"
)

// Opener makes the namespace of one instance. The pool calls Open when it
// starts an instance of the server, bounded by the server's start timeout;
// an error fails that start (and only that server), its message shown to
// the owner as the start error.
type Opener interface {
	Open(ctx context.Context, scope Scope) (Namespace, error)
	// Identity is what the definition runs, for change detection and the
	// schema cache: two Openers with the same Identity list the same tools
	// for the same scope. A change of it replaces the running instances.
	Identity() string
	// Kind names the adapter in status and logs: "openapi", "cli".
	Kind() string
}

// Scope is where one instance runs.
type Scope struct {
	Server   string   // the server's name, for error messages
	Instance string   // the instance id
	Root     string   // the instance root; "" for scopes without one
	Cwd      string   // the directory a command runs in (the root, else the configured cwd, else "")
	Env      []string // the environment a command gets (the server's env rules applied)
	// Run, when not nil, is how a command the namespace starts must run,
	// in place of (*exec.Cmd).Run: confined, for an instance whose
	// caller's policy says so (docs/sandbox.md). It returns what Run
	// would, and the limit that ended the command ("limit: memory 1GiB"),
	// "" if none did. Env is then already the policy's whole environment.
	Run func(ctx context.Context, cmd *exec.Cmd) (limit string, err error)
}

// Namespace is one instance's tools.
type Namespace interface {
	// ListTools returns every tool: names unique, schemas JSON objects.
	ListTools(ctx context.Context) ([]Tool, error)
	// CallTool runs one call. ctx ends when the caller cancels, the call
	// times out or the instance stops; the call must then stop what it
	// started (a process tree, a request) and return. A tool failure is a
	// Result with IsError; an error return is a protocol error (unknown
	// tool, arguments that are not an object).
	CallTool(ctx context.Context, call Call) (*Result, error)
	// Close releases what the namespace holds; calls in flight have ended.
	Close() error
}

// Resources is a Namespace that also has resources.
type Resources interface {
	ListResources(ctx context.Context) ([]Resource, error)
	ReadResource(ctx context.Context, uri string) ([]ResourceContents, error)
}

// Tool is one tool as tools/list has it.
type Tool struct {
	Name         string
	Title        string
	Description  string
	InputSchema  json.RawMessage // a JSON Schema object; nil = {"type":"object"}
	OutputSchema json.RawMessage // nil = none
	Annotations  json.RawMessage // nil = none
}

// Call is one tools/call.
type Call struct {
	Name      string
	Arguments json.RawMessage // a JSON object ({} when the caller sent none)
	// Progress reports progress to the caller; safe to call from any
	// goroutine until CallTool returns; a no-op when the caller asked for
	// none. total 0 = unknown.
	Progress func(progress, total float64, message string)
}

// Result is a tools/call result.
type Result struct {
	Content           []Content
	StructuredContent json.RawMessage // a JSON object, or nil
	IsError           bool
}

// Content is one content block; only text blocks are made by adapters.
type Content struct {
	Type string // "text"
	Text string
}

// TextResult is a result of one text block.
func TextResult(text string, isError bool) *Result {
	return &Result{Content: []Content{{Type: "text", Text: text}}, IsError: isError}
}

// Resource is one entry of resources/list.
type Resource struct {
	URI, Name, Title, Description, MimeType string
}

// ResourceContents is one entry of resources/read's contents: Text, or
// Blob (raw bytes, base64 on the wire).
type ResourceContents struct {
	URI, MimeType string
	Text          string
	Blob          []byte
}
