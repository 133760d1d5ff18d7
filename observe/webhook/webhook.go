// Package webhook POSTs the daemon's lifecycle events to the owner's
// receivers, signed, from a bounded queue per receiver that never makes
// its sender wait.
//
//	s := webhook.New(webhook.Options{Hooks: []webhook.Hook{{URL: u, Secret: key}}, Logger: log})
//	s.Send(webhook.Event{ID: 7, Kind: "crash", Body: doc}) // never blocks
//	defer s.Close(ctx)                                       // delivers what it can until ctx ends
//
// # Signature
//
// Every POST carries
//
//	Content-Type:     application/json
//	X-Mcpx-Event:     <kind>
//	X-Mcpx-Delivery:  <run>-<event id>   (the same on every attempt: deduplicate by it)
//	X-Mcpx-Timestamp: <unix seconds of this attempt>
//	X-Mcpx-Signature: sha256=<hex HMAC-SHA256(secret, timestamp + "." + body)>
//
// The timestamp is signed with the body, so a receiver that refuses
// timestamps older than a few minutes (Verify takes the tolerance) refuses
// a replayed request; each attempt is signed afresh.
//
// # Delivery
//
// Each receiver has one goroutine and a queue of Options.Queue events. Send
// puts an event on the queue of every receiver that wants its kind; a full
// queue drops it (counted, logged at most once per DropLogEvery). An
// attempt is bounded by Options.Timeout; a network error, a 408, a 429 or
// a 5xx is retried up to Options.Attempts in all, waiting Options.Backoff,
// doubled each time (at most MaxBackoff); a 2xx is delivered; anything else
// (a redirect included: it is not followed) fails at once.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The headers of a delivery.
const (
	HeaderEvent     = "X-Mcpx-Event"
	HeaderDelivery  = "X-Mcpx-Delivery"
	HeaderTimestamp = "X-Mcpx-Timestamp"
	HeaderSignature = "X-Mcpx-Signature"
)

// Defaults of Options' zero values.
const (
	DefaultQueue    = 256
	DefaultAttempts = 5
	DefaultBackoff  = time.Second
	DefaultTimeout  = 10 * time.Second
	MaxBackoff      = time.Minute
	// DropLogEvery spaces the log records of a receiver's dropped events.
	DropLogEvery = time.Minute
)

// Hook is one receiver.
type Hook struct {
	URL    string
	Events []string // the kinds it gets; nil = every kind
	Secret []byte   // the HMAC-SHA256 key; required
}

// Options configure a Sender.
type Options struct {
	Hooks    []Hook
	Queue    int           // events waiting per receiver; 0 = DefaultQueue
	Attempts int           // attempts per event, the first included; 0 = DefaultAttempts
	Backoff  time.Duration // the wait before the first retry; 0 = DefaultBackoff
	Timeout  time.Duration // one attempt; 0 = DefaultTimeout
	Client   *http.Client  // nil = a client of its own; redirects are never followed
	Logger   *slog.Logger  // nil = discard
	Now      func() time.Time
	// Run prefixes every delivery id ("<run>-<event id>"): event ids
	// begin again at a daemon's start, its run's id does not come again,
	// so no delivery id is used twice. "" = the event id alone.
	Run string
}

// Event is one lifecycle event to send: Body is its JSON document.
type Event struct {
	ID   uint64
	Kind string
	Body []byte
}

// Stats are one receiver's counters.
type Stats struct {
	Delivered int64 // events a receiver answered 2xx
	Failed    int64 // events given up: refused, or every attempt failed
	Dropped   int64 // events not queued: the queue was full, or lost before the sender saw them
	Retries   int64 // attempts after the first
	Queued    int   // events waiting now
}

// Sender delivers events. Safe for concurrent use.
type Sender struct {
	opts   Options
	log    *slog.Logger
	client *http.Client
	hooks  []*hook
	ctx    context.Context // cancelled by Close once its bound ends
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool // guarded by mu; Send after Close drops nothing and sends nothing
}

type hook struct {
	Hook
	index int
	queue chan Event

	delivered, failed, dropped, retries atomic.Int64
	lastDropLog                         atomic.Int64 // unix nanoseconds
}

// New starts a sender with one goroutine per hook; Close stops them.
func New(opts Options) *Sender {
	opts.Queue = cmpOr(opts.Queue, DefaultQueue)
	opts.Attempts = cmpOr(opts.Attempts, DefaultAttempts)
	opts.Backoff = cmpOr(opts.Backoff, DefaultBackoff)
	opts.Timeout = cmpOr(opts.Timeout, DefaultTimeout)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	client := opts.Client
	if client == nil {
		client = &http.Client{}
	}
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sender{opts: opts, log: log, client: &c, ctx: ctx, cancel: cancel}
	for i, h := range opts.Hooks {
		hk := &hook{Hook: h, index: i, queue: make(chan Event, opts.Queue)}
		s.hooks = append(s.hooks, hk)
		s.wg.Go(func() { s.run(hk) })
	}
	return s
}

func cmpOr[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Send queues ev for every receiver that wants its kind. It never blocks:
// a receiver whose queue is full drops it.
func (s *Sender) Send(ev Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	for _, h := range s.hooks {
		if !h.wants(ev.Kind) {
			continue
		}
		select {
		case h.queue <- ev:
		default:
			s.drop(h, 1, "the receiver's queue is full")
		}
	}
}

// Lost counts n events the sender never saw (its feed fell behind) as
// dropped by every receiver.
func (s *Sender) Lost(n uint64) {
	for _, h := range s.hooks {
		s.drop(h, int64(n), "events were lost before they reached the webhook queue")
	}
}

func (s *Sender) drop(h *hook, n int64, why string) {
	h.dropped.Add(n)
	now := s.opts.Now().UnixNano()
	if last := h.lastDropLog.Load(); now-last >= int64(DropLogEvery) && h.lastDropLog.CompareAndSwap(last, now) {
		s.log.Warn("webhook events dropped", "webhook", h.index, "why", why, "dropped", h.dropped.Load())
	}
}

func (h *hook) wants(kind string) bool { return h.Events == nil || slices.Contains(h.Events, kind) }

// Stats returns each receiver's counters, in Options.Hooks order.
func (s *Sender) Stats() []Stats {
	out := make([]Stats, len(s.hooks))
	for i, h := range s.hooks {
		out[i] = Stats{Delivered: h.delivered.Load(), Failed: h.failed.Load(), Dropped: h.dropped.Load(),
			Retries: h.retries.Load(), Queued: len(h.queue)}
	}
	return out
}

// Close stops taking events and delivers the queued ones until ctx ends;
// then the attempts under way are cut off and what is left is dropped. It
// returns once every goroutine is gone. A second Close returns at once.
func (s *Sender) Close(ctx context.Context) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	for _, h := range s.hooks {
		close(h.queue)
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.cancel()
		<-done
	}
	s.cancel()
}

// run delivers h's queue, one event at a time, until it is closed.
func (s *Sender) run(h *hook) {
	for ev := range h.queue {
		if s.ctx.Err() != nil {
			s.drop(h, 1, "the daemon is stopping")
			continue
		}
		s.deliver(h, ev)
	}
}

// deliver tries ev until it is delivered, refused, or out of attempts.
func (s *Sender) deliver(h *hook, ev Event) {
	wait := s.opts.Backoff
	for attempt := 1; ; attempt++ {
		status, err := s.post(h, ev)
		switch {
		case err == nil && status/100 == 2:
			h.delivered.Add(1)
			return
		case attempt >= s.opts.Attempts || (err == nil && !retryable(status)):
			h.failed.Add(1)
			s.log.Warn("webhook delivery failed; the event is dropped", "webhook", h.index, "event", ev.ID, "kind", ev.Kind,
				"attempts", attempt, "status", status, "err", err)
			return
		}
		h.retries.Add(1)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
			h.failed.Add(1)
			return
		}
		wait = min(2*wait, MaxBackoff)
	}
}

// deliveryID is ev's X-Mcpx-Delivery: the run's and the event's ids.
func (s *Sender) deliveryID(ev Event) string {
	id := strconv.FormatUint(ev.ID, 10)
	if s.opts.Run == "" {
		return id
	}
	return s.opts.Run + "-" + id
}

func retryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// post makes one attempt: the status, or the error that kept it from one.
func (s *Sender) post(h *hook, ev Event) (int, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(ev.Body))
	if err != nil {
		return 0, err
	}
	ts := strconv.FormatInt(s.opts.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "mcpx-webhook")
	req.Header.Set(HeaderEvent, ev.Kind)
	req.Header.Set(HeaderDelivery, s.deliveryID(ev))
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, Sign(h.Secret, ts, ev.Body))
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) //nolint:errcheck // the answer's body means nothing; read some so the connection is reused
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Sign is the X-Mcpx-Signature of body sent at timestamp ts (unix seconds,
// as the X-Mcpx-Timestamp header has it): "sha256=" and the hex
// HMAC-SHA256 of ts + "." + body under secret.
func Sign(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// ErrSignature is what Verify returns for a request mcpx did not sign
// with secret, or signed longer ago than the tolerance.
var ErrSignature = errors.New("webhook signature does not verify")

// Verify checks a delivery as a receiver should: the signature over the
// timestamp and body, in constant time, and a timestamp within tolerance
// of now (a replay is refused).
func Verify(secret []byte, ts, signature string, body []byte, now time.Time, tolerance time.Duration) error {
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: timestamp %q is not unix seconds", ErrSignature, ts)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: timestamp %s is %s from now, beyond %s", ErrSignature, ts, d.Round(time.Second), tolerance)
	}
	if !strings.HasPrefix(signature, "sha256=") || !hmac.Equal([]byte(signature), []byte(Sign(secret, ts, body))) {
		return ErrSignature
	}
	return nil
}
