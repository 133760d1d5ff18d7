package api_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/observe/tracing"
)

// spansByName are the ended spans of rec in trace, by name.
func spansByName(rec *tracetest.SpanRecorder, trace string) map[string]sdktrace.ReadOnlySpan {
	out := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID().String() == trace {
			out[s.Name()] = s
		}
	}
	return out
}

// With tracing on, a REST call's traceparent header and an MCP request's
// _meta.traceparent are the parents of the request's span, whose children
// are authorization, scope resolution, the pool wait and the child's call
// (the spawn and initialize under the pool wait, for the first call). No
// span carries the cwd.
func TestTraceparentFromCallers(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	defer tracing.Use(tp)()
	d := apitest.StartDemo(t, map[string]string{"demo": ""})
	dir := t.TempDir()

	const restTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	resp := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"hi"}`,
		"Traceparent", "00-"+restTrace+"-00f067aa0ba902b7-01", "Mcpx-Cwd", dir)
	if resp.StatusCode != 200 {
		t.Fatalf("call: %d %s", resp.StatusCode, resp.Bytes)
	}
	spans := spansByName(rec, restTrace)
	api := spans["POST /v1/servers/{server}/tools/{tool}"]
	if api == nil || api.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("no API span under the caller's traceparent: %v", spans)
	}
	for _, name := range []string{"mcpx.authorize", "mcpx.scope", "mcpx.pool.wait", "mcpx.child.call"} {
		if s := spans[name]; s == nil || s.Parent().SpanID() != api.SpanContext().SpanID() {
			t.Errorf("%s is not a child of the API span: %v", name, s)
		}
	}
	wait := spans["mcpx.pool.wait"]
	if s := spans["mcpx.spawn"]; s == nil || wait == nil || s.Parent().SpanID() != wait.SpanContext().SpanID() {
		t.Errorf("the first call's spawn is not under its pool wait: %v", s)
	}
	for _, s := range spans {
		for _, a := range s.Attributes() {
			if v := a.Value.Emit(); v == dir || v == `{"message":"hi"}` {
				t.Errorf("span %s carries %s=%s", s.Name(), a.Key, v)
			}
		}
	}

	const mcpTrace = "0af7651916cd43dd8448eb211c80319c"
	_, cs := d.ConnectMCP(t, "/mcp/demo", "2025-11-25", nil)
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"},
		Meta: mcp.Meta{"traceparent": "00-" + mcpTrace + "-b7ad6b7169203331-01"}}); err != nil {
		t.Fatal(err)
	}
	spans = spansByName(rec, mcpTrace)
	req := spans["mcp tools/call echo"]
	if req == nil || req.Parent().SpanID().String() != "b7ad6b7169203331" {
		t.Fatalf("no MCP request span under _meta.traceparent: %v", spans)
	}
	if s := spans["mcpx.child.call"]; s == nil || s.Parent().SpanID() != req.SpanContext().SpanID() {
		t.Errorf("the child's call is not under the MCP request's span: %v", s)
	}
}
