package mcp

import (
	"context"
	"encoding/json"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// Resource subscriptions (MCP server/resources, "Subscriptions"): a
// session's resources/subscribe joins the broker's subscription of that
// URI on the instance its request lands on, shared with every other caller
// subscribed there (broker.SubscribeResource); the child's
// notifications/resources/updated of the URI reach the sessions subscribed
// to it, on their GET stream, and no other. resources/unsubscribe, or the
// session's end (DELETE, idle, a client gone, the daemon stopping), leaves
// it. When the instance stops, the subscription ends and the session is
// told so with a notifications/message warning: subscribing again follows
// the resource on the instance that serves it now.

// subscribe serves resources/subscribe.
func (ss *session) subscribe(ctx context.Context, st *stream, msg *message) (json.RawMessage, error) {
	var p struct {
		URI string `json:"uri"`
	}
	json.Unmarshal(msg.Params, &p) //nolint:errcheck // no uri: refused below
	if p.URI == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "resources/subscribe needs a uri"}
	}
	server, err := ss.resourceServer(ctx, st, p.URI)
	if err != nil {
		return nil, err
	}
	k := server + "\x00" + p.URI
	ss.mu.Lock()
	old := ss.subs[k]
	ss.mu.Unlock()
	if old != nil && old.Why() == "" {
		return json.RawMessage(`{}`), nil // subscribed already
	}
	r := ss.breqAt(ss.cwd(ctx, st), server, nil)
	uri := p.URI
	sub, err := ss.srv.b.SubscribeResource(ctx, r, uri, broker.Watch{
		Updated: func(params json.RawMessage) { ss.notify(nil, jsonrpc.MethodResourceUpdated, params) },
		Ended: func(why string) {
			ss.mu.Lock()
			if s := ss.subs[k]; s != nil && s.Why() != "" {
				delete(ss.subs, k)
			}
			ss.mu.Unlock()
			ss.warn(nil, "mcpx: the subscription to "+uri+" ended: "+why)
		},
	})
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	closed := ss.closed
	if !closed {
		old = ss.subs[k]
		ss.subs[k] = sub
	}
	ss.mu.Unlock()
	if closed {
		sub.Close()
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the session ended"}
	}
	if old != nil {
		old.Close()
	}
	ss.track(r)
	return json.RawMessage(`{}`), nil
}

// unsubscribe serves resources/unsubscribe: the session leaves its
// subscriptions to the URI (none is no error).
func (ss *session) unsubscribe(msg *message) (json.RawMessage, error) {
	var p struct {
		URI string `json:"uri"`
	}
	json.Unmarshal(msg.Params, &p) //nolint:errcheck // no uri: refused below
	if p.URI == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "resources/unsubscribe needs a uri"}
	}
	var left []*broker.Subscription
	ss.mu.Lock()
	for k, sub := range ss.subs {
		if sub.URI() == p.URI {
			left = append(left, sub)
			delete(ss.subs, k)
		}
	}
	ss.mu.Unlock()
	for _, sub := range left {
		sub.Close()
	}
	return json.RawMessage(`{}`), nil
}

// dropSubscriptions leaves every subscription of the session (its end).
func (ss *session) dropSubscriptions() {
	ss.mu.Lock()
	subs := ss.subs
	ss.subs = nil
	ss.mu.Unlock()
	for _, sub := range subs {
		sub.Close()
	}
}

// resourceServer is the server a request naming uri goes to: the path's
// own, or on /mcp the one that listed it.
func (ss *session) resourceServer(ctx context.Context, st *stream, uri string) (string, error) {
	if ss.server != "" {
		return ss.server, nil
	}
	return ss.uriServer(ctx, st, uri)
}

// listenResources subscribes a subscriptions/listen (2026-07-28,
// SEP-2575) to the resources it names: each update goes on the listen's
// stream, tagged with its subscription id (meta), until the listen ends
// (the caller closes subs). honored are the URIs subscribed; one the
// server refuses is left out (the acknowledgement says which were
// honored).
func (ss *session) listenResources(ctx context.Context, st *stream, uris []string, meta json.RawMessage) (subs []*broker.Subscription, honored []string) {
	honored = []string{}
	for _, uri := range uris {
		server, err := ss.resourceServer(ctx, st, uri)
		if err != nil {
			continue
		}
		r := ss.breqAt(ss.cwd(ctx, st), server, nil)
		sub, err := ss.srv.b.SubscribeResource(ctx, r, uri, broker.Watch{Updated: func(params json.RawMessage) {
			if o, err := parseObject(params); err == nil {
				ss.notify(st, jsonrpc.MethodResourceUpdated, o.set("_meta", meta))
			}
		}})
		if err != nil {
			ss.srv.log.Debug("subscriptions/listen: a resource left out", "server", server, "uri", uri, "err", err)
			continue
		}
		subs = append(subs, sub)
		honored = append(honored, uri)
	}
	return subs, honored
}

func closeAll(subs []*broker.Subscription) {
	for _, sub := range subs {
		sub.Close()
	}
}
