package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"mcpx.dev/mcpx/api/metrics"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/observe/webhook"
	"mcpx.dev/mcpx/wire"
)

// WebhookFlush bounds how long a stopping daemon keeps delivering the
// events its webhooks have queued (Options.Drain, if shorter).
const WebhookFlush = 5 * time.Second

// webhookHooks are the config's webhooks as the sender takes them, their
// ${env:NAME} secrets read from getenv. A secret whose variable is unset
// or empty is an error naming the webhook: an unsigned event would be
// indistinguishable from anyone's.
func webhookHooks(hooks []config.Webhook, getenv func(string) string) ([]webhook.Hook, error) {
	out := make([]webhook.Hook, 0, len(hooks))
	for i, h := range hooks {
		secret := h.Secret
		if name := h.SecretEnv(); name != "" {
			if secret = getenv(name); secret == "" {
				return nil, fmt.Errorf("webhooks[%d].secret: the daemon's variable %s is not set; set it in the daemon's environment (the service unit's Environment=), or write the secret in the config", i, name)
			}
		}
		var events []string
		if len(h.Events) > 0 {
			events = h.Events
		}
		out = append(out, webhook.Hook{URL: h.URL, Events: events, Secret: []byte(secret)})
	}
	return out, nil
}

// webhookFeed feeds a sender the broker's lifecycle events.
type webhookFeed struct {
	s     *webhook.Sender
	flush time.Duration
	quit  chan struct{}
	done  chan struct{}
	after uint64 // the last event fed; read once done is closed
	once  sync.Once
}

// startWebhooks starts the sender of the config's webhooks and the
// goroutine that feeds it the broker's lifecycle events after the event
// after (0 = every one kept). Its stop ends the feed after one last pass
// and delivers what is queued, bounded by flush.
func startWebhooks(b *broker.Broker, hooks []webhook.Hook, opts webhook.Options, after uint64, flush time.Duration) *webhookFeed {
	opts.Hooks = hooks
	f := &webhookFeed{s: webhook.New(opts), flush: flush, quit: make(chan struct{}), done: make(chan struct{}), after: after}
	go func() {
		defer close(f.done)
		f.after = feedWebhooks(b, f.s, f.after, f.quit)
	}()
	return f
}

// stop ends the feed and delivers what it queued (bounded by the flush),
// once; it returns the last event fed.
func (f *webhookFeed) stop() uint64 {
	f.once.Do(func() {
		close(f.quit)
		<-f.done
		ctx, cancel := context.WithTimeout(context.Background(), f.flush)
		defer cancel()
		f.s.Close(ctx)
	})
	return f.after
}

// feedWebhooks hands every lifecycle event after the event after to s
// until quit is closed, then those added meanwhile, and returns the last
// it handed. s.Send never blocks, so the feed keeps up with the event log;
// events the log dropped before the feed read them are counted as the
// webhooks' drops.
func feedWebhooks(b *broker.Broker, s *webhook.Sender, after uint64, quit <-chan struct{}) uint64 {
	pass := func() <-chan struct{} {
		evs, lost, more := b.EventsSince(after)
		if lost > 0 {
			s.Lost(lost)
		}
		for _, e := range evs {
			after = e.ID
			body, _ := json.Marshal(webhookDoc(e))
			s.Send(webhook.Event{ID: e.ID, Kind: string(e.Kind), Body: body})
		}
		return more
	}
	for {
		select {
		case <-pass():
		case <-quit:
			pass()
			return after
		}
	}
}

// WebhookHandoff is where the webhooks' deliveries stand at an upgrade:
// the next image goes on after the last event this one fed its webhooks,
// so no event is delivered twice, and under the same run.
type WebhookHandoff struct {
	// Run is the daemon's webhook run: the prefix of every delivery id,
	// new at each start (a restart's event ids begin again at 1) and
	// kept across upgrades (their event ids go on).
	Run string `json:"run"`
	// After is the last event the webhooks were fed (or, with none, the
	// last event there was): the next image feeds its webhooks the events
	// after it.
	After uint64 `json:"after"`
}

// newWebhookRun is a fresh webhook run: 64 random bits, in hex.
func newWebhookRun() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// startWebhookFeed starts the webhooks' feed (if the config has webhooks)
// after what h hands over, if not nil: the events after its last, under
// its run.
func (d *Daemon) startWebhookFeed(hooks []webhook.Hook, opts webhook.Options, h *WebhookHandoff) {
	d.webhookRun = newWebhookRun()
	var after uint64
	if h != nil && h.Run != "" {
		d.webhookRun, after = h.Run, h.After
	}
	if len(hooks) == 0 {
		return
	}
	opts.Logger, opts.Run = d.Log, d.webhookRun
	d.webhooks = startWebhooks(d.Broker, hooks, opts, after, min(WebhookFlush, d.drain))
	d.Webhooks = d.webhooks.s
	d.Metrics.ReadWebhooks(webhookMetrics(d.Webhooks))
}

// stopWebhooks ends the webhooks' feed and delivers what it queued; a
// second call returns at once.
func (d *Daemon) stopWebhooks() {
	if d.webhooks != nil {
		d.webhooks.stop()
	}
}

// webhookHandoff stops the webhooks' feed, delivering what it queued
// (bounded as at a stop), and returns where the next image goes on.
func (d *Daemon) webhookHandoff() WebhookHandoff {
	if d.webhooks != nil {
		return WebhookHandoff{Run: d.webhookRun, After: d.webhooks.stop()}
	}
	var after uint64
	if evs, _, _ := d.Broker.EventsSince(0); len(evs) > 0 {
		after = evs[len(evs)-1].ID
	}
	return WebhookHandoff{Run: d.webhookRun, After: after}
}

// webhookDoc is e as a webhook receives it: the document /v1/events sends
// the daemon's owner, without the child's stderr (it may hold anything a
// child printed, secrets included, and a receiver is off the machine).
func webhookDoc(e broker.Event) wire.LifecycleEvent {
	return wire.LifecycleEvent{ID: e.ID, Time: e.Time, Kind: string(e.Kind), Server: e.Server, Key: e.Key,
		Instance: e.Instance, Pid: e.Pid, Reason: e.Reason, Path: e.Path, Until: e.Until}
}

// webhookMetrics adapts the sender's counters to the metrics'.
func webhookMetrics(s *webhook.Sender) func() []metrics.WebhookStats {
	return func() []metrics.WebhookStats {
		st := s.Stats()
		out := make([]metrics.WebhookStats, len(st))
		for i, v := range st {
			out[i] = metrics.WebhookStats{Delivered: v.Delivered, Failed: v.Failed, Dropped: v.Dropped, Retries: v.Retries}
		}
		return out
	}
}
