package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// callFeedBuffer bounds the calls waiting for one reader of GET /v1/calls;
// beyond it they are dropped and counted in the next one sent.
const callFeedBuffer = 256

// maxCallFeeds bounds the readers of GET /v1/calls at once.
const maxCallFeeds = 32

// callFeed fans finished calls (Broker.ObserveCalls) out to the readers of
// GET /v1/calls. It observes the broker from its first reader on: until
// then a call costs it nothing.
type callFeed struct {
	observe sync.Once
	mu      sync.Mutex
	readers map[*feedReader]struct{} // guarded by mu
}

type feedReader struct {
	key     string // only the calls that landed on this key; "" = all
	ch      chan wire.CallFinished
	dropped int64 // guarded by callFeed.mu
}

func (f *callFeed) add(b *broker.Broker, key string) (*feedReader, bool) {
	f.observe.Do(func() { b.ObserveCalls(f.publish) })
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.readers) >= maxCallFeeds {
		return nil, false
	}
	if f.readers == nil {
		f.readers = map[*feedReader]struct{}{}
	}
	rd := &feedReader{key: key, ch: make(chan wire.CallFinished, callFeedBuffer)}
	f.readers[rd] = struct{}{}
	return rd, true
}

func (f *callFeed) remove(rd *feedReader) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.readers, rd)
}

// publish hands ev to every reader without waiting: it runs on the call's
// path.
func (f *callFeed) publish(ev broker.CallEvent) {
	doc := wire.CallFinished{Time: ev.Time, Server: ev.Server, Tool: ev.Tool, Key: ev.Key, Caller: ev.Caller, Via: ev.Via,
		DurationMs: ms(ev.Duration), Outcome: string(ev.Outcome), Error: string(ev.Kind)}
	f.mu.Lock()
	defer f.mu.Unlock()
	for rd := range f.readers {
		if rd.key != "" && rd.key != ev.Key {
			continue
		}
		d := doc
		d.Dropped = rd.dropped
		select {
		case rd.ch <- d:
			rd.dropped = 0
		default:
			rd.dropped++
		}
	}
}

// streamCalls is GET /v1/calls: each tool call as it finishes, as an SSE
// event named call. Admins only, as /v1/stats: the calls name every
// caller; but with ?session= (a key or a name) the calls of that session,
// which its creator may follow too (`mcpx sessions watch`). A stream whose
// caller's rights end ends with an EventEnd.
func (s *server) streamCalls(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	key, err := s.sessionQuery(c, r, "call feed")
	if err != nil {
		return err
	}
	if key == "" && !c.Rights.Admin() {
		return &broker.Error{Kind: broker.KindForbidden, Op: "call feed", Msg: "only an admin may follow every call: they name every caller",
			Hint: "follow one of your sessions' calls with ?session=<key or name> (`mcpx sessions watch`)"}
	}
	rd, ok := s.callFeed.add(s.b, key)
	if !ok {
		return &broker.Error{Kind: broker.KindUnavailable, Op: "call feed",
			Msg: fmt.Sprintf("the call feed has its %d readers already", maxCallFeeds), Hint: "close another dashboard's Calls view, or another reader of /v1/calls"}
	}
	defer s.callFeed.remove(rd)
	ctx, stop := s.watchRights(r)
	defer stop()
	pump(s, ctx, newEventWriter(w), rd.ch, func(ev *eventWriter, doc wire.CallFinished) bool {
		data, _ := json.Marshal(doc)
		ev.send(wire.EventCall, data)
		return false
	})
	return nil
}

// pump runs a stream that follows ch: each value is handed to send (which
// returns true when the stream is done), a keep-alive comment is written
// when nothing came for a while, and a stream whose caller's rights end
// (ctx, from watchRights) ends with the EventEnd saying why. It returns
// once the stream is done, ended or its client gone.
func pump[T any](s *server, ctx context.Context, ev *eventWriter, ch <-chan T, send func(*eventWriter, T) bool) {
	keepAlive := time.NewTicker(s.keepAlive)
	defer keepAlive.Stop()
	for ev.err == nil {
		select {
		case v := <-ch:
			if send(ev, v) {
				return
			}
		case <-keepAlive.C:
			ev.comment(wire.KeepAliveComment)
		case <-ctx.Done():
			s.sendEnd(ctx, ev)
			return
		}
	}
}

// sessionQuery resolves a request's ?session= (a session's key or name) to
// the key of a session c may see; "" when the query names none.
func (s *server) sessionQuery(c broker.Caller, r *http.Request, op string) (string, error) {
	ref := r.URL.Query().Get(wire.QuerySession)
	if ref == "" {
		return "", nil
	}
	return s.b.SessionKey(c, ref, op)
}
