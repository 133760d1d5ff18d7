package apitest

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/wire"
)

// RESTSub is a REST subscription to a resource: its events as they come.
type RESTSub struct {
	// Events are the stream's events after the first (subscribed); a
	// full buffer drops them.
	Events chan Event
	// Done is closed when the stream has ended.
	Done   chan struct{}
	cancel context.CancelFunc
}

// SubscribeREST opens GET …/resources/subscribe?uri= over the unix socket
// for session and waits for its subscribed event. The stream closes at
// cleanup, if not before.
func (d *Daemon) SubscribeREST(t testing.TB, server, uri, session string) *RESTSub {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, "GET", d.Unix.Base+"/v1/servers/"+server+"/resources/subscribe?uri="+uri, nil)
	req.Header.Set(wire.HeaderSession, session)
	req.Header.Set(wire.HeaderCwd, t.TempDir())
	resp, err := d.Unix.HTTP.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		cancel()
		t.Fatalf("subscribe %s: status %d", uri, resp.StatusCode)
	}
	s := &RESTSub{Events: make(chan Event, 100), cancel: cancel, Done: make(chan struct{})}
	go func() {
		defer close(s.Done)
		defer resp.Body.Close()
		ReadEvents(t, resp.Body, func(ev Event) {
			select {
			case s.Events <- ev:
			default:
			}
		})
	}()
	t.Cleanup(s.Close)
	if ev := s.Next(t); ev.Name != wire.StreamSubscribed || !strings.Contains(ev.Data, uri) {
		t.Fatalf("first event %+v, want subscribed to %s", ev, uri)
	}
	return s
}

// Next is the subscription's next event (at most 30 s away).
func (s *RESTSub) Next(t testing.TB) Event {
	t.Helper()
	select {
	case ev := <-s.Events:
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30s")
		return Event{}
	}
}

// Close ends the stream and waits for it to end.
func (s *RESTSub) Close() {
	s.cancel()
	<-s.Done
}
