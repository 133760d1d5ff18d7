package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"sync"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// DefaultReidentify is Options.Reidentify when it is 0.
const DefaultReidentify = 5 * time.Second

// A long-lived response (the lifecycle events, a followed log, a streamed
// tool call) must end when its caller's rights no longer cover it: a
// token revoked, a tailnet grant taken away. Identity is established per
// request, so such a response re-identifies its caller from its request
// every Reidentify and at once when this daemon revokes a token, and ends
// (rightsEnded) when that fails or gives other rights.

// rightsEnded is the cause of a stream's context when its caller's rights
// ended; err is why.
type rightsEnded struct{ err error }

func (e *rightsEnded) Error() string { return "the caller's rights ended: " + e.err.Error() }
func (e *rightsEnded) Unwrap() error { return e.err }

// endedRights returns why ctx ended if it ended for its caller's rights.
func endedRights(ctx context.Context) (error, bool) {
	var re *rightsEnded
	if errors.As(context.Cause(ctx), &re) {
		return re, true
	}
	return nil, false
}

// watchRights returns a context of r that is cancelled, with a
// *rightsEnded cause, once r's caller is no longer admitted with the rights
// it came with. stop ends the watch and waits for its goroutine.
func (s *server) watchRights(r *http.Request) (ctx context.Context, stop func()) {
	c, _ := callerFrom(r.Context())
	ctx, cancel := context.WithCancelCause(r.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(s.reidentify)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-s.revocations.wait():
			}
			if err := s.stillAdmitted(r, c); err != nil {
				s.log.Info("ending a stream: the caller's rights ended", "caller", c.Name, "via", c.Via, "path", r.URL.Path, "err", err)
				cancel(&rightsEnded{err: err})
				return
			}
		}
	}()
	return ctx, func() { cancel(nil); <-done }
}

// stillAdmitted re-identifies r's caller c: nil if it is admitted with the
// same rights.
func (s *server) stillAdmitted(r *http.Request, c broker.Caller) error {
	now, err := s.identify(r)
	switch {
	case err != nil:
		return err
	case now.Name != c.Name || now.Via != c.Via || !reflect.DeepEqual(now.Rights, c.Rights):
		return &broker.Error{Kind: broker.KindForbidden, Op: "authenticate", Msg: "the caller's rights changed",
			Hint: "reconnect: the stream is served with the rights as they are now"}
	}
	return nil
}

// sendEnd writes the StreamEnd of a stream whose context ended because
// its caller's rights did; a stream that ended otherwise gets nothing.
func (s *server) sendEnd(ctx context.Context, ev *eventWriter) {
	why, ok := endedRights(ctx)
	if !ok {
		return
	}
	data, _ := json.Marshal(wire.StreamEndData{Reason: why.Error()})
	ev.send(wire.StreamEnd, data)
}

// broadcast wakes every waiter at once (each wait takes the current
// channel; broadcast closes it and makes a new one).
type broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

func newBroadcast() *broadcast { return &broadcast{ch: make(chan struct{})} }

func (b *broadcast) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ch
}

func (b *broadcast) notify() {
	b.mu.Lock()
	close(b.ch)
	b.ch = make(chan struct{})
	b.mu.Unlock()
}
