package daemon

import (
	"context"
	"encoding/json"
	"fmt"
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

// startWebhooks starts the sender of the config's webhooks and the
// goroutine that feeds it the broker's lifecycle events, from the first
// the daemon kept. The returned stop ends the feed after one last pass and
// delivers what is queued, bounded by flush.
func startWebhooks(b *broker.Broker, hooks []webhook.Hook, opts webhook.Options, flush time.Duration) (*webhook.Sender, func()) {
	opts.Hooks = hooks
	s := webhook.New(opts)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		feedWebhooks(b, s, quit)
	}()
	return s, func() {
		close(quit)
		<-done
		ctx, cancel := context.WithTimeout(context.Background(), flush)
		defer cancel()
		s.Close(ctx)
	}
}

// feedWebhooks hands every lifecycle event to s until quit is closed, then
// those added meanwhile. s.Send never blocks, so the feed keeps up with the
// event log; events the log dropped before the feed read them are counted
// as the webhooks' drops.
func feedWebhooks(b *broker.Broker, s *webhook.Sender, quit <-chan struct{}) {
	var after uint64
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
			return
		}
	}
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
