package tracing

import (
	"context"
	"crypto/rand"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Root starts a new trace for one command of the CLI (`mcpx call --trace`)
// and returns its context, the trace id, and end, which ends the span and
// flushes it; call end before the process exits. When the standard
// variables name a collector (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) the command's span is exported there
// (service.name "mcpx-cli"); else the trace is only propagated: the broker's
// spans are the first that are recorded, children of a parent no collector
// has. Either way the trace is sampled, so a broker with otel on records it.
func Root(ctx context.Context, name string) (_ context.Context, traceID string, end func()) {
	if firstEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT") != "" {
		if shutdown, err := Setup(Options{Service: "mcpx-cli"}); err == nil && Enabled() {
			ctx, sp := Start(ctx, name, Client)
			return ctx, sp.SpanContext().TraceID().String(), func() {
				sp.End()
				fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				shutdown(fctx) //nolint:errcheck // a span lost on the way out is not the command's failure
			}
		}
	}
	var tid trace.TraceID
	var sid trace.SpanID
	rand.Read(tid[:])
	rand.Read(sid[:])
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	return trace.ContextWithSpanContext(ctx, sc), tid.String(), func() {}
}
