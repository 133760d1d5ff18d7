package api

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// Registered here rather than in the handlers table, whose alignment a
// longer name would change on every line.
func init() { handlers[wire.OpSubscribeResource] = (*server).subscribeResource }

// maxQueuedUpdates bounds the updates a slow reader of a subscription may
// have queued; more are dropped (an update only says "read it again", so
// a later one stands for a dropped one).
const maxQueuedUpdates = 64

// subscribeResource is GET /v1/servers/{server}/resources/subscribe?uri=:
// the caller joins the broker's subscription of uri on the instance of its
// scope (shared with every other caller subscribed to it there), and the
// child's updates of uri are sent as events until the client goes away
// (which leaves the subscription), the instance stops or the caller's
// rights end (an end event says why). See wire.StreamSubscribed.
func (s *server) subscribeResource(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	uri := r.URL.Query().Get("uri")
	if uri == "" {
		return &broker.Error{Kind: broker.KindBadRequest, Op: "subscribe", Server: req.Server, Field: "uri",
			Msg: "the uri query parameter is required", Hint: "add ?uri=<resource uri> (see the server's resources)"}
	}
	ctx, stop := s.watchRights(r)
	defer stop()
	updates := make(chan json.RawMessage, maxQueuedUpdates)
	var dropped atomic.Int64
	sub, err := s.b.SubscribeResource(ctx, req, uri, broker.Watch{Updated: func(p json.RawMessage) {
		select {
		case updates <- p:
		default:
			dropped.Add(1)
		}
	}})
	if err != nil {
		return err
	}
	defer sub.Close()
	defer func() {
		if n := dropped.Load(); n > 0 {
			s.log.Debug("resource updates dropped for a slow reader", "server", req.Server, "updates", n)
		}
	}()
	ev := newEventWriter(w)
	first, _ := json.Marshal(wire.ResourceUpdated{URI: uri})
	ev.send(wire.StreamSubscribed, first)
	keepAlive := time.NewTicker(s.keepAlive)
	defer keepAlive.Stop()
	for ev.err == nil {
		select {
		case p := <-updates:
			ev.send(wire.StreamUpdated, p)
		case <-keepAlive.C:
			ev.comment(wire.KeepAliveComment)
		case <-sub.Done():
			data, _ := json.Marshal(wire.StreamEndData{Reason: sub.Why()})
			ev.send(wire.StreamEnd, data)
			return nil
		case <-ctx.Done():
			s.sendEnd(ctx, ev)
			return nil
		}
	}
	return nil
}
