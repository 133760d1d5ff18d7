package mcp

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"mcpx.dev/mcpx/mcp/jsonrpc"
	"mcpx.dev/mcpx/observe/tracing"
)

// traceRequest starts the span of one MCP request, a child of its
// params._meta.traceparent when it has one (else of the HTTP request's
// traceparent header, which api read), named as OpenTelemetry's MCP
// conventions name it: the method, and for tools/call the tool. No
// arguments, session id or roots go on it.
func (ss *session) traceRequest(ctx context.Context, msg *message) (context.Context, trace.Span) {
	ctx = tracing.FromTraceparent(ctx, msg.meta("traceparent"))
	name, tool := "mcp "+msg.Method, ""
	if msg.Method == jsonrpc.MethodToolsCall {
		if p, err := msg.params(); err == nil {
			tool, _ = jsonrpc.Unquote(p.get("name"))
		}
		if tool != "" {
			name += " " + tool
		}
	}
	ctx, sp := tracing.Start(ctx, name, tracing.Server)
	if sp.IsRecording() {
		sp.SetAttributes(attribute.String("mcp.method.name", msg.Method), attribute.String("mcpx.caller.kind", ss.caller.Via))
		if tool != "" {
			sp.SetAttributes(attribute.String("mcpx.tool", tool))
		}
	}
	return ctx, sp
}
