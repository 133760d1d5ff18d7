package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/observe/webhook"
)

var secret = []byte("s3cret")

// received is what a test receiver got.
type received struct {
	header http.Header
	body   []byte
}

// receiver is a loopback receiver answering status, recording each request.
func receiver(t *testing.T, status int) (*httptest.Server, func() []received) {
	t.Helper()
	var mu sync.Mutex
	var got []received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, received{r.Header.Clone(), b})
		mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []received { mu.Lock(); defer mu.Unlock(); return append([]received(nil), got...) }
}

func newSender(t *testing.T, opts webhook.Options) *webhook.Sender {
	t.Helper()
	s := webhook.New(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Close(ctx)
	})
	return s
}

// TestSignedDelivery: the receiver gets each event it asked for, once, with
// a signature it can check by hand: HMAC-SHA256 over timestamp "." body.
func TestSignedDelivery(t *testing.T) {
	srv, got := receiver(t, http.StatusNoContent)
	s := newSender(t, webhook.Options{Hooks: []webhook.Hook{{URL: srv.URL, Events: []string{"crash", "wedged"}, Secret: secret}}})
	s.Send(webhook.Event{ID: 1, Kind: "spawn", Body: []byte(`{"id":1,"kind":"spawn"}`)})
	s.Send(webhook.Event{ID: 2, Kind: "crash", Body: []byte(`{"id":2,"kind":"crash"}`)})
	s.Send(webhook.Event{ID: 3, Kind: "wedged", Body: []byte(`{"id":3,"kind":"wedged"}`)})
	testenv.WaitFor(t, "two deliveries", func() bool { return s.Stats()[0].Delivered == 2 })
	reqs := got()
	if len(reqs) != 2 {
		t.Fatalf("got %d requests, want 2 (spawn is not asked for)", len(reqs))
	}
	for i, want := range []string{"crash", "wedged"} {
		r := reqs[i]
		ts := r.header.Get(webhook.HeaderTimestamp)
		m := hmac.New(sha256.New, secret)
		fmt.Fprintf(m, "%s.%s", ts, r.body)
		if sig := r.header.Get(webhook.HeaderSignature); sig != "sha256="+hex.EncodeToString(m.Sum(nil)) {
			t.Errorf("%s: signature %q does not verify by hand", want, sig)
		}
		if err := webhook.Verify(secret, ts, r.header.Get(webhook.HeaderSignature), r.body, time.Now(), 5*time.Minute); err != nil {
			t.Errorf("%s: Verify: %v", want, err)
		}
		if r.header.Get(webhook.HeaderEvent) != want || r.header.Get(webhook.HeaderDelivery) != fmt.Sprint(i+2) ||
			r.header.Get("Content-Type") != "application/json" {
			t.Errorf("headers %v, want event %s, delivery %d, JSON", r.header, want, i+2)
		}
	}
	// Another key, a changed body or an old timestamp (a replay) fails.
	r := reqs[0]
	ts, sig := r.header.Get(webhook.HeaderTimestamp), r.header.Get(webhook.HeaderSignature)
	for name, err := range map[string]error{
		"wrong key":    webhook.Verify([]byte("other"), ts, sig, r.body, time.Now(), 5*time.Minute),
		"changed body": webhook.Verify(secret, ts, sig, append(r.body, ' '), time.Now(), 5*time.Minute),
		"replayed":     webhook.Verify(secret, ts, sig, r.body, time.Now().Add(10*time.Minute), 5*time.Minute),
	} {
		if !errors.Is(err, webhook.ErrSignature) {
			t.Errorf("%s: Verify = %v, want ErrSignature", name, err)
		}
	}
}

// TestRetriedThenFailed: a receiver answering 500 gets every attempt, then
// the event is given up and counted; a 400 is not retried.
func TestRetriedThenFailed(t *testing.T) {
	bad, gotBad := receiver(t, http.StatusInternalServerError)
	refusing, gotRefusing := receiver(t, http.StatusBadRequest)
	s := newSender(t, webhook.Options{Attempts: 3, Backoff: time.Millisecond,
		Hooks: []webhook.Hook{{URL: bad.URL, Secret: secret}, {URL: refusing.URL, Secret: secret}}})
	s.Send(webhook.Event{ID: 1, Kind: "crash", Body: []byte(`{}`)})
	testenv.WaitFor(t, "both given up", func() bool { st := s.Stats(); return st[0].Failed == 1 && st[1].Failed == 1 })
	st := s.Stats()
	if len(gotBad()) != 3 || st[0].Retries != 2 || st[0].Delivered != 0 {
		t.Errorf("500 receiver: %d requests, stats %+v; want 3 attempts, 2 retries", len(gotBad()), st[0])
	}
	if len(gotRefusing()) != 1 || st[1].Retries != 0 {
		t.Errorf("400 receiver: %d requests, stats %+v; want 1 attempt, no retry", len(gotRefusing()), st[1])
	}
}

// TestHangingReceiverDrops: a receiver that never answers holds one event
// in its attempt; the queue holds Queue more; the rest are dropped at once
// and counted, and Send never waits. Close ends the hanging attempt.
func TestHangingReceiverDrops(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) })
	const queue, n = 4, 100
	s := webhook.New(webhook.Options{Queue: queue, Timeout: time.Minute, Hooks: []webhook.Hook{{URL: hang.URL, Secret: secret}}})
	s.Send(webhook.Event{ID: 0, Kind: "crash", Body: []byte(`{}`)})
	testenv.WaitFor(t, "the first attempt under way", func() bool { return s.Stats()[0].Queued == 0 })
	for i := range n {
		s.Send(webhook.Event{ID: uint64(i + 1), Kind: "crash", Body: []byte(`{}`)})
	}
	st := s.Stats()[0]
	if st.Queued != queue || st.Dropped != n-queue {
		t.Errorf("stats %+v, want %d queued and %d dropped", st, queue, n-queue)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	s.Close(ctx)
	st = s.Stats()[0]
	if st.Delivered != 0 || st.Failed+st.Dropped != n+1 {
		t.Errorf("after Close: stats %+v, want every event failed or dropped", st)
	}
}

// TestRedirectNotFollowed: a 3xx is a failure; the sender does not POST
// the event elsewhere.
func TestRedirectNotFollowed(t *testing.T) {
	target, gotTarget := receiver(t, http.StatusOK)
	redirect := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)
	s := newSender(t, webhook.Options{Hooks: []webhook.Hook{{URL: redirect.URL, Secret: secret}}})
	s.Send(webhook.Event{ID: 1, Kind: "crash", Body: []byte(`{}`)})
	testenv.WaitFor(t, "given up", func() bool { return s.Stats()[0].Failed == 1 })
	if len(gotTarget()) != 0 {
		t.Error("the redirect was followed")
	}
}
