package broker

import (
	"context"
	"encoding/json"

	"mcpx.dev/mcpx/mcp/client"
)

// InputRequest is a child's request for input (client.InputRequest),
// attributed to one call in flight: its Method (jsonrpc.MethodElicit, a
// form to fill in, or jsonrpc.MethodSample, a completion from the
// caller's model; or jsonrpc.MethodRootsList for a server with
// callerRoots) and its Params as the child sent them; the handler owns
// them.
type InputRequest client.InputRequest

// InputHandler answers a child's request for input on behalf of the caller
// of the call it belongs to (Request.OnInput): it returns the result to send
// the child (an ElicitResult or a CreateMessageResult); an error gets the
// child a refusal. ctx ends when the call ends or the child's session
// does; a handler must return then. It runs on its own goroutine.
type InputHandler func(ctx context.Context, req InputRequest) (json.RawMessage, error)

// withInputHandler returns ctx carrying h for the call made with it (see
// client.WithInputHandler).
func withInputHandler(ctx context.Context, h InputHandler) context.Context {
	return client.WithInputHandler(ctx, func(ctx context.Context, req client.InputRequest) (json.RawMessage, error) {
		return h(ctx, InputRequest(req))
	})
}

// CallerCapabilities are what the caller of one call can answer
// (Request.Capabilities): a stateless child is told, per request, only what
// both mcpx and the caller can (client.WithCallerCapabilities).
type CallerCapabilities struct {
	Elicitation json.RawMessage // the caller's elicitation capability; nil = none
	Sampling    bool
	// LogLevel is the level of the log messages the caller wants; "" =
	// none (client.CallerCapabilities.LogLevel).
	LogLevel string
}

// withCaller returns ctx carrying r's input handler and capabilities.
func withCaller(ctx context.Context, r Request) context.Context {
	if r.OnInput != nil {
		ctx = withInputHandler(ctx, withCallerRoots(r.OnInput, r.Caller))
		ctx = withSignInAsk(ctx, r)
	}
	if c := r.Capabilities; c != nil {
		ctx = client.WithCallerCapabilities(ctx, client.CallerCapabilities{Elicitation: c.Elicitation, Sampling: c.Sampling, LogLevel: c.LogLevel})
	}
	return ctx
}
