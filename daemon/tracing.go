package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/observe/tracing"
)

// startTracing turns on OpenTelemetry traces when the config has an otel
// block; the spans not yet exported are flushed at Close, last, so the
// stop's own spans go too. Log lines written with a traced context carry
// its trace_id. A change of the block takes effect at the next start.
func (d *Daemon) startTracing(o config.OTel) error {
	if !o.On {
		return nil
	}
	shutdown, err := tracing.Setup(tracing.Options{Endpoint: o.Endpoint, Protocol: o.Protocol, Headers: o.Headers, Sample: o.Sample})
	if err != nil {
		return fmt.Errorf("otel: %w", err)
	}
	d.Log = slog.New(tracing.LogHandler(d.Log.Handler()))
	d.closers = append(d.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			d.Log.Warn("otel: flushing spans", "err", err)
		}
	})
	d.Log.Info("otel: tracing on", "endpoint", o.Endpoint, "protocol", o.Protocol)
	return nil
}
