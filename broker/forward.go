package broker

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// What an MCP endpoint in front of the broker (package api/mcp) needs
// beyond the REST API's calls: the requests it passes on to a child as they
// came, resource templates, and the notifications children send.

// Forwarded are the MCP methods Forward passes on to a child as they came.
// Tool calls go through CallTool (records, rights), listings through their
// own methods (the schema cache), subscriptions through SubscribeResource
// (one child subscription shared by its callers).
var Forwarded = []string{
	jsonrpc.MethodComplete,
	jsonrpc.MethodSetLevel,
	jsonrpc.MethodResourcesRead,
	jsonrpc.MethodPromptsGet,
}

// Forward sends the MCP request method with params (a JSON object, as the
// client sent it; nil = none) to the child of r's scope and returns its
// result unchanged. method must be one of Forwarded (else KindBadRequest).
// onProgress, if non-nil, receives the params of the child's progress
// notifications for it; r.OnInput answers its requests for input.
func (b *Broker) Forward(ctx context.Context, r Request, method string, params json.RawMessage, onProgress func(json.RawMessage)) (json.RawMessage, error) {
	if !slices.Contains(Forwarded, method) {
		return nil, &Error{Kind: KindBadRequest, Op: "forward", Server: r.Server, Field: "method",
			Msg: "mcpx does not pass " + method + " on to a server"}
	}
	ctx = withCaller(ctx, r)
	var out json.RawMessage
	err := b.do(ctx, r, method, func(ctx context.Context, s *client.Session) (err error) {
		out, err = s.Call(ctx, method, params, onProgress)
		return err
	})
	return out, err
}

// ResourceTemplates returns the server's resource templates: a JSON array
// of MCP ResourceTemplate objects.
func (b *Broker) ResourceTemplates(ctx context.Context, r Request) (json.RawMessage, error) {
	return b.list(ctx, r, jsonrpc.MethodResourceTemplatesList, "list resource templates", (*client.Session).ResourceTemplates)
}

// Notice is a notification a child sent (but progress, which reaches its
// call): Server and Key name the instance (as Target does), Method and
// Params are the notification's. A Notice with Method NoticeReload says
// the config was reloaded: every server's lists may have changed.
type Notice struct {
	Server, Key string
	Method      string
	Params      json.RawMessage
}

// NoticeReload is the Method of the Notice sent after a reload.
const NoticeReload = "mcpx/reload"

// notices holds the functions WatchNotices registered.
type notices struct {
	mu  sync.Mutex
	fns map[int]func(Notice)
	seq int
}

// WatchNotices calls fn with every Notice until stop is called. fn runs on
// the child's reader: it must not block (hand the notice to a goroutine or
// a bounded queue) or call the broker.
func (b *Broker) WatchNotices(fn func(Notice)) (stop func()) {
	n := &b.notices
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fns == nil {
		n.fns = map[int]func(Notice){}
	}
	n.seq++
	id := n.seq
	n.fns[id] = fn
	return func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(n.fns, id)
	}
}

// notify hands a notice to every watcher.
func (b *Broker) notify(nt Notice) {
	n := &b.notices
	n.mu.Lock()
	fns := make([]func(Notice), 0, len(n.fns))
	for _, fn := range n.fns {
		fns = append(fns, fn)
	}
	n.mu.Unlock()
	for _, fn := range fns {
		fn(nt)
	}
}

// EndSession stops the instances of c's session id (the key an
// Mcpx-Session of id names for c), as an MCP endpoint does when the MCP
// session that was the caller's session ends. No instances is no error.
func (b *Broker) EndSession(ctx context.Context, c Caller, id string) error {
	key := callerKey("session:"+id, c)
	s, ok := b.session(c, key, b.sessionInstances(key))
	if !ok {
		return nil
	}
	return b.stopInstances(ctx, s.Instances, "end session")
}

// InitializeResult is the initialize result of r's server as its child in
// r's scope gave it (protocolVersion, capabilities, serverInfo,
// instructions; a stateless child's server/discover in that shape): from
// the schema cache when a child of its definition answered before, else
// from a child, started if need be.
func (b *Broker) InitializeResult(ctx context.Context, r Request) (json.RawMessage, error) {
	res, err := b.resolve(r)
	if err != nil {
		return nil, err
	}
	if init, ok := b.pool.CachedInit(ctx, res.target); ok {
		return init, nil
	}
	var out json.RawMessage
	err = b.run(ctx, res, r.Server, jsonrpc.MethodInitialize, func(ctx context.Context, s *client.Session) error {
		out = s.InitializeResult()
		return nil
	})
	return out, err
}

// CachedInitializeResult is InitializeResult from the schema cache only:
// ok false, and no child started, when it does not know the answer.
func (b *Broker) CachedInitializeResult(ctx context.Context, r Request) (json.RawMessage, bool) {
	res, err := b.resolve(r)
	if err != nil {
		return nil, false
	}
	return b.pool.CachedInit(ctx, res.target)
}
