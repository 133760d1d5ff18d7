package client

import (
	"context"
	"encoding/json"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"mcpx.dev/mcpx/observe/tracing"
)

// With tracing on, a tools/call carries the caller's span as
// params._meta.traceparent after the arguments, which pass as they came
// (not re-encoded); off, the request is as before (TestCallResultBytesUnchanged).
func TestCallCarriesTraceparent(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	defer tracing.Use(tp)()
	p := newPeer(t)
	s := p.connect(Options{}, "2025-11-25")
	ctx, sp := tracing.Start(t.Context(), "child call")
	defer sp.End()
	tpv := tracing.Traceparent(ctx)
	ch := make(chan callResult, 1)
	go func() {
		res, err := s.CallTool(ctx, "echo", json.RawMessage(`{"message":"hi","n":1.50}`), nil)
		ch <- callResult{res, err}
	}()
	p.expect(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi","n":1.50},"_meta":{"traceparent":"` + tpv + `"}}}`)
	p.send(`{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`)
	if r := <-ch; r.err != nil {
		t.Fatal(r.err)
	}
}
