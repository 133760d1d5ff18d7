package tracing

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// on turns tracing on for one test, recording spans in memory.
func on(t *testing.T) *tracetest.SpanRecorder {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	restore := Use(tp)
	t.Cleanup(func() { restore(); tp.Shutdown(context.Background()) })
	return rec
}

const callerTP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// Off, the hooks cost nothing: no allocation, no span, no traceparent.
func TestOffIsFree(t *testing.T) {
	ctx := context.Background()
	h := http.Header{"Traceparent": {callerTP}}
	allocs := testing.AllocsPerRun(100, func() {
		c, sp := Start(ctx, "x") // (an option would allocate its variadic slice: callers test Enabled first)
		c, sp2 := StartChild(FromTraceparent(FromHeader(c, h), callerTP), "y")
		if sp.IsRecording() || sp2.IsRecording() || Traceparent(c) != "" || TraceID(c) != "" {
			t.Fatal("off, a span records or a trace context appeared")
		}
		sp2.End()
		sp.End()
	})
	if allocs != 0 {
		t.Errorf("off, the hooks allocate %v times per request, want 0", allocs)
	}
}

// A caller's traceparent (header or _meta) is the parent of the span
// started under it, and the traceparent sent on names that span.
func TestPropagation(t *testing.T) {
	rec := on(t)
	for name, ctx := range map[string]context.Context{
		"header": FromHeader(context.Background(), http.Header{"Traceparent": {callerTP}}),
		"_meta":  FromTraceparent(context.Background(), callerTP),
	} {
		ctx, sp := Start(ctx, "api")
		out := Traceparent(ctx)
		sp.End()
		spans := rec.Ended()
		got := spans[len(spans)-1]
		if got.Parent().SpanID().String() != "00f067aa0ba902b7" || got.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Errorf("%s: span parent %s in trace %s, want the caller's", name, got.Parent().SpanID(), got.SpanContext().TraceID())
		}
		if want := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + got.SpanContext().SpanID().String() + "-01"; out != want {
			t.Errorf("%s: traceparent sent on %q, want %q", name, out, want)
		}
		h := http.Header{}
		Inject(ctx, h)
		if h.Get("Traceparent") != out {
			t.Errorf("%s: Inject set %q, want %q", name, h.Get("Traceparent"), out)
		}
	}
	// Without a caller's span, StartChild starts nothing: background work
	// makes no traces of its own.
	if _, sp := StartChild(context.Background(), "background"); sp.IsRecording() {
		t.Error("StartChild without a parent started a span")
	}
}

// Log lines written with a traced context carry its trace_id.
func TestLogHandlerTraceID(t *testing.T) {
	on(t)
	var buf bytes.Buffer
	log := slog.New(LogHandler(slog.NewJSONHandler(&buf, nil))).With("k", "v")
	ctx, sp := Start(context.Background(), "x")
	defer sp.End()
	log.InfoContext(ctx, "traced")
	log.Info("untraced")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if want := `"trace_id":"` + sp.SpanContext().TraceID().String() + `"`; len(lines) != 2 || !strings.Contains(lines[0], want) || strings.Contains(lines[1], "trace_id") {
		t.Errorf("log lines %q: want the first only with %s", lines, want)
	}
}

// Root starts a sampled trace even with no collector to export to.
func TestRootWithoutCollector(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	ctx, id, end := Root(context.Background(), "cmd")
	defer end()
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsSampled() || sc.TraceID().String() != id || len(id) != 32 {
		t.Errorf("Root: span context %v, id %q: want a sampled trace of that id", sc, id)
	}
	h := http.Header{}
	Inject(ctx, h)
	if !strings.Contains(h.Get("Traceparent"), id) {
		t.Errorf("Root's trace is not propagated: traceparent %q", h.Get("Traceparent"))
	}
}

// A protocol mcpx does not speak is refused, naming the field and the fix.
func TestSetupBadProtocol(t *testing.T) {
	_, err := Setup(Options{Endpoint: "http://127.0.0.1:1", Protocol: "http/json"})
	if err == nil || !strings.Contains(err.Error(), "otel.protocol") || !strings.Contains(err.Error(), `"grpc"`) {
		t.Errorf("Setup with protocol http/json: %v", err)
	}
}
