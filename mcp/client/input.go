package client

import (
	"bytes"
	"context"
	"encoding/json"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// The server-to-client requests that ask the caller of a call for input
// (jsonrpc.MethodElicit, jsonrpc.MethodSample).
//
// Spec (client/elicitation): "Servers can request information from users
// through the client by sending an elicitation/create request"; (client/
// sampling): "servers send a sampling/createMessage request". Both are
// nested: (basic/transports) messages a server sends before its response
// "SHOULD relate to the originating client request".

// InputRequest is a child's elicitation/create or sampling/createMessage,
// attributed to one call in flight.
type InputRequest struct {
	Method string          // jsonrpc.MethodElicit or jsonrpc.MethodSample
	Params json.RawMessage // as the child sent them; the handler owns them
	// ID is a stateless child's key for the request in its inputRequests
	// (so a client asked in turn can be asked under the same key); "" for
	// a handshake child's request.
	ID string
	// Round is how many of a stateless child's requests of one
	// input_required round go to the caller together, this one among them
	// (0 or 1: it alone); the handler is called for each, concurrently, so
	// that a client can be asked them all at once.
	Round int
}

// InputHandler answers a child's request for input on behalf of the caller
// of the call it belongs to. It returns the result to send the child
// (an ElicitResult or a CreateMessageResult). An error gets the child the
// refusal InputRefusal describes. ctx ends when the call ends (answered, or
// its caller gave up) or the session ends; a handler must return then.
// It runs on its own goroutine, never on the session's reader.
type InputHandler func(ctx context.Context, req InputRequest) (json.RawMessage, error)

type inputKey struct{}

// WithInputHandler returns ctx carrying h: a Call or CallTool made with it
// hands the child's requests for input that are attributed to that call to
// h (see the package doc, "Requests for input"). Without one, or with h
// nil, they are refused.
func WithInputHandler(ctx context.Context, h InputHandler) context.Context {
	return context.WithValue(ctx, inputKey{}, h)
}

func inputHandlerOf(ctx context.Context) InputHandler {
	h, _ := ctx.Value(inputKey{}).(InputHandler)
	return h
}

// nests reports whether a request of method may have server requests nested
// in it (a tool call, a resource read, a prompt): only those are candidates
// for the attribution of a request for input.
func nests(method string) bool {
	switch method {
	case jsonrpc.MethodToolsCall, jsonrpc.MethodResourcesRead, jsonrpc.MethodPromptsGet:
		return true
	}
	return false
}

// InputRefusal returns the answer a child gets when its request for input
// cannot reach a caller (no caller is streaming, the caller did not answer
// in time or went away, or the request is not attributable to one call):
// for elicitation the result {"action":"decline"} (spec client/elicitation:
// "Decline: User explicitly declined the request"), which every server
// must handle; for sampling the error the spec shows for a user who
// rejected it (code -1).
func InputRefusal(method, why string) (json.RawMessage, *jsonrpc.Error) {
	switch method {
	case jsonrpc.MethodElicit:
		return json.RawMessage(`{"action":"decline"}`), nil
	case jsonrpc.MethodSample:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeUserRejected, Message: "sampling request declined: " + why}
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + method}
}

// inputTarget finds the call a request for input belongs to.
//
// The rule (documented in docs/input.md):
//  1. related, when the transport knows it: streamable HTTP delivers a
//     request on the answer stream of the POST it relates to, so that
//     request's call is the one;
//  2. else the one call in flight on the session that may nest requests:
//     the reader handles messages in order, so a request read while exactly
//     one such call is pending was sent before any other call's answer
//     could relate it to another;
//  3. else (none, or several: a shared stdio child serving two callers)
//     the request is not attributable and is refused: routing it to the
//     wrong caller would show one caller another's data.
//
// It returns nil and why when there is no target.
func (s *Session) inputTarget(related []byte) (*call, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if related != nil {
		if id, ok := parseID(related); ok {
			if c := s.pending[id]; c != nil {
				return c, ""
			}
		}
		return nil, "mcpx cannot ask the caller: the call it relates to is no longer in flight"
	}
	var only *call
	n := 0
	for _, c := range s.pending {
		if c.nests {
			n++
			only = c
		}
	}
	switch {
	case n == 0:
		return nil, "mcpx found no call in flight whose caller it could ask"
	case n > 1:
		return nil, "mcpx cannot tell which caller to ask: several calls are in flight and the request names none"
	case only.onInput == nil:
		return nil, "mcpx cannot ask the caller: it is not streaming the call, so it cannot be asked for input"
	}
	return only, ""
}

// input handles a child's request for input: it finds the call it belongs
// to and hands it to that call's handler on a goroutine the session owns,
// or refuses it at once.
func (s *Session) input(id []byte, method string, params, related []byte) {
	id = bytes.Clone(id)
	c, why := s.inputTarget(related)
	if c == nil || c.onInput == nil {
		if why == "" {
			why = "mcpx cannot ask the caller: it is not streaming the call, so it cannot be asked for input"
		}
		s.log.Debug("refusing a request for input", "method", method, "why", why)
		res, rerr := InputRefusal(method, why)
		s.sendAsync("answer to "+method, replyMessage(id, res, rerr))
		return
	}
	s.mu.Lock()
	if s.pending == nil {
		s.mu.Unlock()
		return
	}
	s.replies.Add(1)
	s.mu.Unlock()
	req := InputRequest{Method: method, Params: bytes.Clone(params)}
	go func() {
		defer s.replies.Done()
		ctx, cancel := context.WithCancel(c.ctx)
		defer cancel()
		defer context.AfterFunc(s.ctx, cancel)()
		res, err := c.onInput(ctx, req)
		var rerr *jsonrpc.Error
		if err == nil && !json.Valid(res) {
			err = errBadInputResult
		}
		if err != nil {
			res, rerr = InputRefusal(method, err.Error())
		}
		s.sendAsync("answer to "+method, replyMessage(id, res, rerr))
	}()
}

type inputError string

func (e inputError) Error() string { return string(e) }

const errBadInputResult = inputError("the input handler returned no valid JSON")

// CallerCapabilities are what the caller of one call can answer, for a
// stateless child's per-request _meta (WithCallerCapabilities).
type CallerCapabilities struct {
	// Elicitation is the caller's elicitation capability as it declared
	// it ({} or {"form":{},"url":{}}); nil = it cannot be asked.
	Elicitation json.RawMessage
	// Sampling: the caller can answer sampling/createMessage (declared
	// to the child only if Options.Sampling allows it too).
	Sampling bool
	// LogLevel is the level of the log messages the caller wants
	// (logging/setLevel's, or its own request's _meta); a stateless
	// child is asked for them in the request's _meta. "" = none: such a
	// child sends none.
	LogLevel string
}

type callerCapsKey struct{}

// WithCallerCapabilities returns ctx carrying caps: a request made with it
// to a stateless child declares, in its _meta, only what both mcpx and the
// caller can answer (roots as always; elicitation and sampling as caps
// allow), so that the child refuses what the caller could not answer
// (-32021) instead of asking for it. A handshake child's capabilities are
// fixed at its initialize and are not changed.
func WithCallerCapabilities(ctx context.Context, caps CallerCapabilities) context.Context {
	return context.WithValue(ctx, callerCapsKey{}, caps)
}
