package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// streamEvents is GET /v1/events: the lifecycle events the daemon keeps,
// oldest first, each as an SSE event with its id, then (unless
// ?follow=false) every new one as it happens; ?session= (a key or a name)
// keeps that session's instances' events. A Last-Event-ID resumes
// after that id; if events after it are no longer kept, a gap event says
// how many were lost. Callers see the events of the servers they may use;
// a stream whose caller's rights end ends with an EventEnd saying why.
func (s *server) streamEvents(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	var after uint64
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return &broker.Error{Kind: broker.KindBadRequest, Op: "events", Msg: "Last-Event-ID must be an event id (a decimal number)",
				Hint: "send the id of the last event received, or no Last-Event-ID for every kept event"}
		}
		after = n
	}
	follow := true
	switch r.URL.Query().Get("follow") {
	case "", "true", "1":
	case "false", "0":
		follow = false
	default:
		return &broker.Error{Kind: broker.KindBadRequest, Op: "events", Msg: "follow must be true or false"}
	}
	key, err := s.sessionQuery(c, r, "events")
	if err != nil {
		return err
	}
	ctx, stop := s.watchRights(r)
	defer stop()
	ev := newEventWriter(w)
	keepAlive := time.NewTicker(s.keepAlive)
	defer keepAlive.Stop()
	for ev.err == nil {
		evs, lost, more := s.b.EventsSince(after)
		if lost > 0 {
			// The id of the gap is the last one lost: resuming from it
			// asks for exactly what follows.
			after += lost
			data, _ := json.Marshal(wire.EventGapData{Lost: lost})
			ev.sendID(after, wire.EventGap, data)
		}
		for _, e := range evs {
			after = e.ID
			if key != "" && e.Key != key {
				continue
			}
			if doc, ok := eventFor(c, e); ok {
				data, _ := json.Marshal(doc)
				ev.sendID(e.ID, doc.Kind, data)
			}
		}
		if !follow {
			return nil
		}
		select {
		case <-more:
		case <-keepAlive.C:
			ev.comment(wire.KeepAliveComment)
		case <-ctx.Done():
			s.sendEnd(ctx, ev)
			return nil
		}
	}
	return nil
}

// eventFor is e as caller c may see it, or false if it concerns a server c
// may not use. The owner sees everything; other callers no path, no stderr,
// no tool diff and no reason but a restart's (reasons can name paths, keys and a child's
// errors); callers without admin rights no key or pid of instances that
// are not theirs.
func eventFor(c broker.Caller, e broker.Event) (wire.LifecycleEvent, bool) {
	if e.Server != "" && !c.Rights.MayUse(e.Server) {
		return wire.LifecycleEvent{}, false
	}
	doc := wire.LifecycleEvent{ID: e.ID, Time: e.Time, Kind: string(e.Kind), Server: e.Server, Key: e.Key,
		Instance: e.Instance, Pid: e.Pid, Reason: e.Reason, Path: e.Path, Until: e.Until, StderrTail: e.StderrTail,
		Tool: e.Tool, Change: e.Change, OldHash: e.OldHash, NewHash: e.NewHash, Flags: e.Flags, Diff: e.Diff}
	if c.Owner {
		return doc, true
	}
	doc.Path, doc.StderrTail, doc.Diff = "", "", ""
	if doc.Kind != wire.EventRestart {
		doc.Reason = ""
	}
	if !c.Rights.Admin() && e.Key != "" && !ownsInstance(c, broker.Instance{Key: e.Key}) {
		doc.Key, doc.Pid = "", 0
	}
	return doc, true
}
