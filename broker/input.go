package broker

import (
	"context"
	"encoding/json"

	"mcpx.dev/mcpx/pool/mcpclient"
)

// The methods of a child's requests for input (InputRequest.Method).
const (
	MethodElicit = mcpclient.MethodElicit // elicitation/create: a form to fill in
	MethodSample = mcpclient.MethodSample // sampling/createMessage: a completion from the caller's model
)

// InputRequest is a child's request for input (mcpclient.InputRequest),
// attributed to one call in flight: its Method (MethodElicit or
// MethodSample) and its Params as the child sent them; the handler owns
// them.
type InputRequest mcpclient.InputRequest

// InputHandler answers a child's request for input on behalf of the caller
// of the call it belongs to (Request.OnInput): it returns the result to send
// the child (an ElicitResult or a CreateMessageResult); an error gets the
// child a refusal. ctx ends when the call ends or the child's session
// does; a handler must return then. It runs on its own goroutine.
type InputHandler func(ctx context.Context, req InputRequest) (json.RawMessage, error)

// withInputHandler returns ctx carrying h for the call made with it (see
// mcpclient.WithInputHandler).
func withInputHandler(ctx context.Context, h InputHandler) context.Context {
	return mcpclient.WithInputHandler(ctx, func(ctx context.Context, req mcpclient.InputRequest) (json.RawMessage, error) {
		return h(ctx, InputRequest(req))
	})
}

// CallerCapabilities are what the caller of one call can answer
// (Request.Capabilities): a stateless child is told, per request, only what
// both mcpx and the caller can (mcpclient.WithCallerCapabilities).
type CallerCapabilities struct {
	Elicitation json.RawMessage // the caller's elicitation capability; nil = none
	Sampling    bool
}

// withCaller returns ctx carrying r's input handler and capabilities.
func withCaller(ctx context.Context, r Request) context.Context {
	if r.OnInput != nil {
		ctx = withInputHandler(ctx, withCallerRoots(r.OnInput, r.Caller))
	}
	if c := r.Capabilities; c != nil {
		ctx = mcpclient.WithCallerCapabilities(ctx, mcpclient.CallerCapabilities{Elicitation: c.Elicitation, Sampling: c.Sampling})
	}
	return ctx
}
