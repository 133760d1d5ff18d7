// Package tracing is mcpx's OpenTelemetry traces: the SDK set up from the
// config's "otel" block and the standard OTEL_EXPORTER_OTLP_* variables,
// spans for the request path, and W3C trace context in and out (the
// traceparent header, and an MCP message's _meta.traceparent).
//
// Off by default, and then free: Start returns a no-op span without
// allocating, and the propagation helpers return at once. Callers set
// attributes only when the span records (Span.IsRecording), so an
// attribute list is never built for nothing.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// The protocols of Options.Protocol, as OTEL_EXPORTER_OTLP_PROTOCOL names
// them.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Options configure the exporter. Zero fields fall back to the standard
// variables (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_PROTOCOL, ...), which the
// OTLP exporters read themselves.
type Options struct {
	// Endpoint is the collector's base URL, as OTEL_EXPORTER_OTLP_ENDPOINT:
	// http/protobuf sends to Endpoint + "/v1/traces".
	Endpoint string
	// Protocol is ProtocolHTTP (the default) or ProtocolGRPC.
	Protocol string
	// Headers are sent with every export (an API key, say).
	Headers map[string]string
	// Sample is the fraction of new traces recorded, 0 to 1; nil = 1. A
	// caller's traceparent decides for the traces it starts.
	Sample *float64
	// Service is the service.name of the spans ("mcpx" if empty).
	Service string
}

// Enabled reports whether a Setup is in force. Hooks elsewhere test it
// before doing any tracing work.
func Enabled() bool { return enabled.Load() }

var (
	enabled atomic.Bool
	tracer  atomic.Pointer[trace.Tracer]
	prop    = propagation.TraceContext{}
)

// Setup installs a tracer provider exporting over OTLP as o says and
// returns its shutdown, which flushes the spans not yet sent; call it
// once, before the process exits. Spans start only after Setup.
func Setup(o Options) (shutdown func(context.Context) error, err error) {
	if v := strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")); strings.EqualFold(v, "true") {
		return func(context.Context) error { return nil }, nil
	}
	exp, err := newExporter(o)
	if err != nil {
		return nil, err
	}
	sample := 1.0
	if o.Sample != nil {
		sample = *o.Sample
	}
	service := o.Service
	if service == "" {
		service = "mcpx"
	}
	if v := os.Getenv("OTEL_SERVICE_NAME"); v != "" {
		service = v
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(sample))),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))),
	)
	t := tp.Tracer("mcpx.dev/mcpx")
	tracer.Store(&t)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(prop)
	enabled.Store(true)
	return func(ctx context.Context) error {
		enabled.Store(false)
		return tp.Shutdown(ctx)
	}, nil
}

func newExporter(o Options) (*otlptrace.Exporter, error) {
	protocol := o.Protocol
	if protocol == "" {
		protocol = firstEnv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if o.Endpoint != "" {
		if _, err := url.Parse(o.Endpoint); err != nil {
			return nil, fmt.Errorf("otel.endpoint %q is not a URL: %w", o.Endpoint, err)
		}
	}
	ctx := context.Background()
	switch protocol {
	case "", ProtocolHTTP:
		var opts []otlptracehttp.Option
		if o.Endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(o.Endpoint, "/")+"/v1/traces"))
		}
		if len(o.Headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(o.Headers))
		}
		return otlptracehttp.New(ctx, opts...)
	case ProtocolGRPC:
		var opts []otlptracegrpc.Option
		if o.Endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(o.Endpoint))
		}
		if len(o.Headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(o.Headers))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	return nil, errors.New(`otel.protocol ` + fmt.Sprintf("%q", protocol) + ` is not one mcpx speaks: use "http/protobuf" or "grpc"`)
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// Start starts a span named name, a child of ctx's span. Off, it returns
// ctx and a no-op span, allocating nothing.
func Start(ctx context.Context, name string, kind ...trace.SpanStartOption) (context.Context, trace.Span) {
	if !enabled.Load() {
		return ctx, noop.Span{}
	}
	return (*tracer.Load()).Start(ctx, name, kind...)
}

// StartChild is Start when ctx already has a span (a traced request),
// else a no-op: work done outside any request starts no trace of its own.
func StartChild(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if !enabled.Load() || !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, noop.Span{}
	}
	return (*tracer.Load()).Start(ctx, name, opts...)
}

// Server is the span option of a span that serves a request.
var Server = trace.WithSpanKind(trace.SpanKindServer)

// Client is the span option of a span that makes a request.
var Client = trace.WithSpanKind(trace.SpanKindClient)

// FromHeader returns ctx carrying the remote span of h's traceparent (and
// tracestate), if any.
func FromHeader(ctx context.Context, h http.Header) context.Context {
	if !enabled.Load() || h.Get("Traceparent") == "" {
		return ctx
	}
	return prop.Extract(ctx, propagation.HeaderCarrier(h))
}

// FromTraceparent returns ctx carrying the remote span of a W3C
// traceparent value (an MCP request's _meta.traceparent), if it is one.
func FromTraceparent(ctx context.Context, traceparent string) context.Context {
	if !enabled.Load() || traceparent == "" {
		return ctx
	}
	return prop.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// Traceparent is the W3C traceparent of ctx's span, "" if it has none.
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	prop.Inject(ctx, c)
	return c["traceparent"]
}

// Inject sets h's traceparent (and tracestate) to ctx's span, if it has
// one.
func Inject(ctx context.Context, h http.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	prop.Inject(ctx, propagation.HeaderCarrier(h))
}

// TraceID is the trace id of ctx's span in hex, "" if it has none.
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.HasTraceID() {
		return ""
	}
	return sc.TraceID().String()
}

// Fail marks sp failed with err (nil: nothing).
func Fail(sp trace.Span, err error) {
	if err == nil || !sp.IsRecording() {
		return
	}
	sp.RecordError(err)
	sp.SetStatus(codes.Error, err.Error())
}

// NoSpan is the no-op span, for a variable that holds a span only when
// tracing is on.
var NoSpan trace.Span = noop.Span{}

// Use turns tracing on with tp's tracer instead of Setup's exporter, for
// tests that record spans in memory; restore turns it off again.
func Use(tp trace.TracerProvider) (restore func()) {
	t := tp.Tracer("mcpx.dev/mcpx")
	tracer.Store(&t)
	enabled.Store(true)
	return func() { enabled.Store(false) }
}
