package api

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/mcp/jsonrpc"
	"mcpx.dev/mcpx/wire"
)

// Requests for input (docs/input.md): a
// child's elicitation/create or sampling/createMessage during a streamed
// call becomes an EventInput on the call's stream; its caller answers with
// POST /v1/calls/{call}/input. The wait is bounded (limits.inputWait), and
// a caller that does not answer, or goes away, gets the child a decline.

// callRegistry holds the streamed calls in flight, by id. Safe for
// concurrent use.
type callRegistry struct {
	mu    sync.Mutex
	calls map[string]*streamedCall // guarded by mu
}

func newCallRegistry() *callRegistry {
	return &callRegistry{calls: make(map[string]*streamedCall)}
}

// streamedCall is one streamed call that may be asked for input.
type streamedCall struct {
	id     string
	caller broker.Caller // who made the call: only the same identity answers
	wait   time.Duration // limits.inputWait
	asks   chan wire.InputRequest
	log    func(msg string, args ...any)

	mu     sync.Mutex
	inputs map[string]*pendingInput // guarded by mu; the questions not yet answered
	urls   map[string]bool          // guarded by mu; the elicitationIds of url-mode questions asked
}

// pendingInput is one question waiting for the caller.
type pendingInput struct {
	kind   string             // wire.InputElicitation or wire.InputSampling
	url    bool               // a url-mode elicitation: accept carries no content
	schema *jsonschema.Schema // the elicitation's requested schema; nil = any object
	answer chan inputAnswer   // buffered 1; receives at most one answer
}

type inputAnswer struct {
	result json.RawMessage
	err    error
}

// start registers a new streamed call of c and returns it; end removes it.
func (r *callRegistry) start(c broker.Caller, wait time.Duration, log func(string, ...any)) *streamedCall {
	sc := &streamedCall{id: randomID(), caller: c, wait: wait, asks: make(chan wire.InputRequest),
		inputs: make(map[string]*pendingInput), log: log}
	r.mu.Lock()
	r.calls[sc.id] = sc
	r.mu.Unlock()
	return sc
}

func (r *callRegistry) end(sc *streamedCall) {
	r.mu.Lock()
	delete(r.calls, sc.id)
	r.mu.Unlock()
}

// lookup returns the call id of caller c; another caller's call does not
// exist to it.
func (r *callRegistry) lookup(id string, c broker.Caller) *streamedCall {
	r.mu.Lock()
	sc := r.calls[id]
	r.mu.Unlock()
	if sc == nil || !sameCaller(sc.caller, c) {
		return nil
	}
	return sc
}

// sameCaller reports whether a and b are the same identity, as the API
// named them: a question a child asks one caller is never shown to, nor
// answered by, another.
func sameCaller(a, b broker.Caller) bool {
	return a.Name == b.Name && a.Via == b.Via && a.Owner == b.Owner && a.Uid == b.Uid
}

func randomID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ask is the call's broker.InputHandler: it hands the question to the
// stream (the handler's goroutine writes it as EventInput) and waits for
// the caller's answer, the call's end, or the bound.
func (sc *streamedCall) ask(ctx context.Context, req broker.InputRequest) (json.RawMessage, error) {
	in := wire.InputRequest{Call: sc.id, Input: randomID(), Params: req.Params, Expires: time.Now().Add(sc.wait)}
	p := &pendingInput{answer: make(chan inputAnswer, 1)}
	switch req.Method {
	case jsonrpc.MethodElicit:
		in.Kind, p.kind = wire.InputElicitation, wire.InputElicitation
		var params struct {
			Mode            string          `json:"mode"`
			Message         string          `json:"message"`
			RequestedSchema json.RawMessage `json:"requestedSchema"`
			URL             string          `json:"url"`
			ElicitationID   string          `json:"elicitationId"`
		}
		if err := json.Unmarshal(req.Params, &params); err != nil {
			return nil, fmt.Errorf("malformed elicitation params: %w", err)
		}
		in.Message, in.Mode = params.Message, cmp.Or(params.Mode, wire.InputModeForm)
		switch in.Mode {
		case wire.InputModeForm:
			in.RequestedSchema = params.RequestedSchema
			var err error
			if p.schema, err = compileRequested(params.RequestedSchema); err != nil {
				return nil, fmt.Errorf("the requested schema does not compile: %w", err)
			}
		case wire.InputModeURL:
			// Spec 2025-11-25 (client/elicitation, URL mode): the user opens
			// url out of band; the server says when it is done with
			// notifications/elicitation/complete naming elicitationId.
			if params.URL == "" || params.ElicitationID == "" {
				return nil, errors.New("a url-mode elicitation without its url or elicitationId")
			}
			in.URL, in.ElicitationID, p.url = params.URL, params.ElicitationID, true
			sc.noteURL(params.ElicitationID)
		default:
			return nil, fmt.Errorf("elicitation mode %q is not one mcpx knows (form, url)", params.Mode)
		}
	case jsonrpc.MethodSample:
		in.Kind, p.kind = wire.InputSampling, wire.InputSampling
	default:
		return nil, fmt.Errorf("unknown request for input %q", req.Method)
	}
	sc.mu.Lock()
	sc.inputs[in.Input] = p
	sc.mu.Unlock()
	defer func() {
		sc.mu.Lock()
		delete(sc.inputs, in.Input)
		sc.mu.Unlock()
	}()
	t := time.NewTimer(sc.wait)
	defer t.Stop()
	select {
	case sc.asks <- in:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case a := <-p.answer:
		return a.result, a.err
	case <-t.C:
		sc.log("the caller did not answer a request for input in time; declined", "input", in.Input, "kind", in.Kind, "wait", sc.wait)
		return nil, fmt.Errorf("the caller did not answer within %s", sc.wait)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// take removes and returns the question id, so that it is answered once.
func (sc *streamedCall) take(id string) *pendingInput {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	p := sc.inputs[id]
	delete(sc.inputs, id)
	return p
}

// put gives the question back after an answer that was refused, so that
// the caller can send a corrected one.
func (sc *streamedCall) put(id string, p *pendingInput) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.inputs[id] = p
}

// answerInput serves POST /v1/calls/{call}/input.
func (s *server) answerInput(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	var ans wire.InputAnswer
	if err := s.readDocument(w, r, &ans, "input answer"); err != nil {
		return err
	}
	id := param(r, "call")
	sc := s.calls.lookup(id, c)
	if sc == nil {
		return &broker.Error{Kind: broker.KindNotFound, Op: "answer input", Field: "call",
			Msg:  fmt.Sprintf("no streamed call %q of yours is in flight", id),
			Hint: "answer with the call id of the stream's first (call) event, while the call runs"}
	}
	p := sc.take(ans.Input)
	if p == nil {
		return &broker.Error{Kind: broker.KindNotFound, Op: "answer input", Field: "input",
			Msg:  fmt.Sprintf("call %q has no open request for input %q", id, ans.Input),
			Hint: "answer with the input id of an input event not yet answered, before it expires"}
	}
	a, err := p.reply(ans)
	if err != nil {
		sc.put(ans.Input, p)
		return err
	}
	p.answer <- a
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// reply turns the caller's answer into the child's reply, or a 400 naming
// the field that is wrong (the question stays open).
func (p *pendingInput) reply(ans wire.InputAnswer) (inputAnswer, error) {
	switch ans.Action {
	case wire.ActionAccept:
	case wire.ActionDecline, wire.ActionCancel:
		if p.kind == wire.InputSampling {
			did := map[string]string{wire.ActionDecline: "declined", wire.ActionCancel: "cancelled"}[ans.Action]
			return inputAnswer{err: errors.New("the caller " + did + " it")}, nil
		}
		b, _ := json.Marshal(map[string]string{"action": ans.Action})
		return inputAnswer{result: b}, nil
	default:
		return inputAnswer{}, badAnswer("action", fmt.Sprintf("action %q is not one of accept, decline, cancel", ans.Action),
			`send "accept" with content, or "decline" or "cancel"`)
	}
	if p.url {
		// Accepting a URL elicitation says the user agreed to open it; the
		// result has no content (spec: client/elicitation, URL mode).
		return inputAnswer{result: json.RawMessage(`{"action":"accept"}`)}, nil
	}
	content := bytes.TrimSpace(ans.Content)
	if len(content) == 0 || content[0] != '{' {
		return inputAnswer{}, badAnswer("content", "an accept needs content: a JSON object", contentHint(p.kind))
	}
	if p.kind == wire.InputSampling {
		var res struct {
			Role    string          `json:"role"`
			Model   string          `json:"model"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(content, &res); err != nil || res.Role == "" || res.Model == "" || len(res.Content) == 0 {
			return inputAnswer{}, badAnswer("content", "a sampling answer's content must be a CreateMessageResult with role, model and content", contentHint(p.kind))
		}
		return inputAnswer{result: content}, nil
	}
	if p.schema != nil {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(content))
		if err != nil {
			return inputAnswer{}, badAnswer("content", "content is not valid JSON", contentHint(p.kind))
		}
		if err := p.schema.Validate(v); err != nil {
			field, msg := schemaFailure(err)
			return inputAnswer{}, badAnswer(field, msg, "correct it and answer again; the request stays open until it expires")
		}
	}
	b, err := json.Marshal(struct {
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
	}{wire.ActionAccept, content})
	if err != nil {
		return inputAnswer{}, badAnswer("content", "content is not valid JSON", contentHint(p.kind))
	}
	return inputAnswer{result: b}, nil
}

func contentHint(kind string) string {
	if kind == wire.InputSampling {
		return `such as {"role":"assistant","content":{"type":"text","text":"…"},"model":"…"}`
	}
	return "an object with the properties of the requested schema"
}

func badAnswer(field, msg, hint string) error {
	return &broker.Error{Kind: broker.KindBadRequest, Op: "answer input", Field: field, Msg: msg, Hint: hint}
}

// schemaFailure names the first failing field of a validation error
// ("content.name") and says what is wrong with it.
func schemaFailure(err error) (field, msg string) {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "content", err.Error()
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	field = strings.Join(append([]string{"content"}, ve.InstanceLocation...), ".")
	// A leaf's text is "at '/name': got number, want string".
	text := ve.Error()
	if _, after, ok := strings.Cut(text, "': "); ok {
		text = after
	}
	return field, fmt.Sprintf("%s: %s", field, text)
}

// compileRequested compiles an elicitation's requested schema (nil when
// there is none). The child is not trusted: no $ref is ever loaded (a
// file: or http: reference fails to compile), and formats are asserted as
// the spec's email, uri, date and date-time ask.
func compileRequested(schema json.RawMessage) (*jsonschema.Schema, error) {
	if len(bytes.TrimSpace(schema)) == 0 || bytes.Equal(bytes.TrimSpace(schema), []byte("null")) {
		return nil, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})
	const u = "mcpx:requested-schema.json"
	if err := c.AddResource(u, doc); err != nil {
		return nil, err
	}
	return c.Compile(u)
}

// noLoader refuses every URL a schema refers to.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema references are not loaded: %s", url)
}
