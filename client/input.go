package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"mcpx.dev/mcpx/wire"
)

// CallOptions are the optional parts of a call (Client.Call). The zero
// value is a plain, unstreamed call.
type CallOptions struct {
	// OnProgress, if set, streams the call and gets the params of each
	// progress notification, in order, on the calling goroutine; it owns
	// them.
	OnProgress func(json.RawMessage)
	// OnInput, if set, streams the call and answers the child's requests
	// for input (elicitation forms, sampling) on behalf of the user. It
	// runs on its own goroutine while the stream is read on; ctx ends
	// when the call does. An error declines. An answer the broker refuses
	// (400: content that does not match the requested schema) is asked
	// for again, at most MaxInputAttempts times in all, then declined.
	// Unset, the child gets a decline for each, at once.
	//
	// A URL-mode elicitation (in.Mode wire.InputModeURL) asks the user to
	// open in.URL: accept (no content) once they have been shown it, or
	// decline; a handler that cannot show a URL declines.
	OnInput func(ctx context.Context, in wire.InputRequest) (wire.InputAnswer, error)
	// OnMessage, if set, streams the call and gets each log message
	// (notifications/message) the call's instance sends while it runs, on
	// the calling goroutine.
	OnMessage func(wire.LogMessage)
	// OnElicitationComplete, if set, gets the child's word that a
	// URL-mode elicitation of this call is done
	// (notifications/elicitation/complete), on the calling goroutine.
	OnElicitationComplete func(wire.ElicitationComplete)
}

// MaxInputAttempts bounds the answers OnInput is asked for per request.
const MaxInputAttempts = 3

// Call calls a tool like CallTool, with the options o.
func (c *Client) Call(ctx context.Context, cl Caller, server, tool string, args json.RawMessage, o CallOptions) (json.RawMessage, error) {
	var h http.Header
	if o.OnProgress != nil || o.OnInput != nil || o.OnMessage != nil {
		h = http.Header{"Accept": {wire.MediaEventStream}}
	}
	resp, err := c.send(ctx, wire.OpCallTool, &cl, args, h, "", server, tool)
	if err != nil {
		return nil, err
	}
	if !isEventStream(resp) {
		return readRaw(resp, nil)
	}
	defer resp.Body.Close()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	answer := o.OnInput
	if answer == nil {
		// Streamed for progress only: nobody can answer, so decline at
		// once rather than leave the child waiting for the broker's bound.
		answer = func(context.Context, wire.InputRequest) (wire.InputAnswer, error) {
			return wire.InputAnswer{Action: wire.ActionDecline}, nil
		}
	}
	onInput := func(in wire.InputRequest) {
		wg.Go(func() { c.answerInput(ctx, in, answer) })
	}
	return readCallEvents(resp.Body, o.OnProgress, onInput, o.notice)
}

// notice hands a message or elicitation-complete event to its callback.
func (o CallOptions) notice(event string, data json.RawMessage) {
	switch event {
	case wire.StreamMessage:
		var m wire.LogMessage
		if o.OnMessage != nil && json.Unmarshal(data, &m) == nil {
			o.OnMessage(m)
		}
	case wire.StreamElicitationComplete:
		var c wire.ElicitationComplete
		if o.OnElicitationComplete != nil && json.Unmarshal(data, &c) == nil {
			o.OnElicitationComplete(c)
		}
	}
}

// answerInput asks fn for the answer to in and sends it; a failed fn, or
// too many refused answers, decline.
func (c *Client) answerInput(ctx context.Context, in wire.InputRequest, fn func(context.Context, wire.InputRequest) (wire.InputAnswer, error)) {
	for range MaxInputAttempts {
		ans, err := fn(ctx, in)
		if err != nil || ctx.Err() != nil {
			break
		}
		ans.Input = in.Input
		err = c.AnswerInput(ctx, in.Call, ans)
		var p *wire.Problem
		if !errors.As(err, &p) || p.Status != http.StatusBadRequest {
			return // sent, or the call is over
		}
	}
	if ctx.Err() == nil {
		c.AnswerInput(ctx, in.Call, wire.InputAnswer{Input: in.Input, Action: wire.ActionDecline}) //nolint:errcheck // the broker declines on its own at the bound
	}
}

// AnswerInput answers a request for input of the streamed call id
// (POST /v1/calls/{call}/input). A content the requested schema refuses is
// a *wire.Problem with status 400 naming the field; the request stays open.
func (c *Client) AnswerInput(ctx context.Context, call string, ans wire.InputAnswer) error {
	body, err := json.Marshal(ans)
	if err != nil {
		return err
	}
	resp, err := c.send(ctx, wire.OpAnswerInput, nil, body, nil, "", call)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
