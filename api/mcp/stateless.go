package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// The stateless era asks the client for input with input_required results
// (SEP-2322): the request is answered {resultType: "input_required",
// inputRequests: {id: {method, params}}, requestState}, and the client sends
// it again with inputResponses {id: result} and the requestState. mcpx asks
// this way for the client's roots (when it declared them and sent no
// Mcpx-Cwd), and for a child's elicitation or sampling, whose call waits,
// parked under its requestState, for the retry that brings the answer.

// Input request ids mcpx uses in inputRequests.
const (
	inputRoots = "mcpx-roots"
	inputChild = "mcpx-input"
)

// rounds are the methods that may take input_required rounds.
var rounds = map[string]bool{jsonrpc.MethodToolsCall: true, jsonrpc.MethodPromptsGet: true, jsonrpc.MethodResourcesRead: true}

// parked is a stateless call waiting for the client's answer to its
// child's request for input.
type parked struct {
	caller broker.Caller
	events chan parkedEvent // from the call: a request for input, or the end
	cancel context.CancelFunc
	at     time.Time
	keys   []string // the inputRequests keys the client was asked under

	mu      sync.Mutex
	answers map[string]chan json.RawMessage // to the call: the client's answer, by key
}

// answer gives each request the client was asked the client's answer to
// it (nil: none).
func (pk *parked) answer(responses object) {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	for _, k := range pk.keys {
		if ch := pk.answers[k]; ch != nil {
			ch <- responses.get(k)
			delete(pk.answers, k)
		}
	}
}

type parkedEvent struct {
	input  *broker.InputRequest
	result json.RawMessage // the result (or nil with err)
	err    error
}

type parkedCalls struct {
	mu sync.Mutex
	m  map[string]*parked
}

func (s *Server) park(pk *parked) string {
	tok := "mcpx:" + newID()
	s.parked.mu.Lock()
	defer s.parked.mu.Unlock()
	if s.parked.m == nil {
		s.parked.m = map[string]*parked{}
	}
	pk.at = time.Now()
	s.parked.m[tok] = pk
	return tok
}

// unpark takes the call parked under tok, if c parked it.
func (s *Server) unpark(tok string, c broker.Caller) *parked {
	s.parked.mu.Lock()
	defer s.parked.mu.Unlock()
	pk := s.parked.m[tok]
	if pk == nil || pk.caller.Name != c.Name || pk.caller.Via != c.Via {
		return nil
	}
	delete(s.parked.m, tok)
	return pk
}

// dropParked cancels calls parked longer than wait.
func (s *Server) dropParked(now time.Time, wait time.Duration) {
	s.parked.mu.Lock()
	defer s.parked.mu.Unlock()
	for tok, pk := range s.parked.m {
		if now.Sub(pk.at) > wait {
			pk.cancel()
			delete(s.parked.m, tok)
		}
	}
}

// statelessRound runs a request of a stateless client that may take input
// rounds (rounds[msg.Method]).
func (ss *session) statelessRound(ctx context.Context, st *stream, msg *message) (json.RawMessage, error) {
	p, err := msg.params()
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg.Method + " params: " + err.Error()}
	}
	responses, _ := parseObject(p.get("inputResponses"))
	if tok := p.str("requestState"); tok != "" {
		pk := ss.srv.unpark(tok, ss.caller)
		if pk == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState is unknown or expired: send the request again without it"}
		}
		pk.answer(responses)
		return ss.await(ctx, pk)
	}
	if rs := responses.get(inputRoots); rs != nil {
		ss.setRoots(rs)
	} else if ss.caps.roots && ss.hdr.Cwd == "" && ss.needsCwd() {
		reqs, _ := json.Marshal(map[string]any{inputRoots: map[string]any{"method": jsonrpc.MethodRootsList, "params": map[string]any{}}})
		return object{}.setString("resultType", "input_required").set("inputRequests", reqs).bytes(), nil
	}
	// The call runs on the server's context, bounded by InputWait per
	// round: it outlives this request when it waits for input.
	cctx, cancel := context.WithCancel(ss.srv.ctx)
	pk := &parked{caller: ss.caller, events: make(chan parkedEvent, 1), answers: map[string]chan json.RawMessage{}, cancel: cancel}
	// inputResponses sent with no requestState answer the child's
	// requests under their keys, once each, and the others are ignored, as
	// the child itself would (SEP-2322: a server ignores information it
	// does not recognize; the suite's input-required-result-ignore-extra-params).
	early := responses.without(inputRoots)
	ss.input = func(ctx context.Context, req broker.InputRequest) (json.RawMessage, error) {
		// The child's own key, when it has one: a client is asked as the
		// child asked.
		key, answer := cmp.Or(req.ID, inputChild), make(chan json.RawMessage, 1)
		pk.mu.Lock()
		if a := early.get(key); a != nil {
			early = early.without(key)
			pk.mu.Unlock()
			return a, nil
		}
		pk.answers[key] = answer
		pk.mu.Unlock()
		select {
		case pk.events <- parkedEvent{input: &req}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		select {
		case a := <-answer:
			if a == nil {
				return nil, errors.New("the client sent no answer")
			}
			return a, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	go func() {
		defer cancel()
		res, err := ss.dispatch(cctx, st, msg)
		pk.events <- parkedEvent{result: res, err: err}
	}()
	return ss.await(ctx, pk)
}

// await waits for a parked call's next word: its result, or its child's
// request for input, which becomes an input_required result.
func (ss *session) await(ctx context.Context, pk *parked) (json.RawMessage, error) {
	select {
	case ev := <-pk.events:
		if ev.input == nil {
			return ev.result, ev.err
		}
		// The requests of one round of the child come together
		// (InputRequest.Round): the client is asked them in one.
		inputs := []*broker.InputRequest{ev.input}
		for len(inputs) < ev.input.Round {
			select {
			case more := <-pk.events:
				if more.input == nil {
					return more.result, more.err
				}
				inputs = append(inputs, more.input)
			case <-ctx.Done():
				pk.cancel()
				return nil, ctx.Err()
			}
		}
		all := map[string]any{}
		pk.keys = pk.keys[:0]
		for _, in := range inputs {
			k := cmp.Or(in.ID, inputChild)
			all[k] = map[string]any{"method": in.Method, "params": in.Params}
			pk.keys = append(pk.keys, k)
		}
		reqs, _ := json.Marshal(all)
		tok := ss.srv.park(pk)
		return object{}.setString("resultType", "input_required").set("inputRequests", reqs).setString("requestState", tok).bytes(), nil
	case <-ctx.Done():
		pk.cancel()
		return nil, ctx.Err()
	}
}

// setRoots takes a roots/list result a stateless client sent in
// inputResponses.
func (ss *session) setRoots(raw json.RawMessage) {
	var r struct {
		Roots []struct {
			URI string `json:"uri"`
		} `json:"roots"`
	}
	json.Unmarshal(raw, &r) //nolint:errcheck // none
	var dirs []string
	for _, root := range r.Roots {
		if d, ok := rootDir(root.URI); ok {
			dirs = append(dirs, d)
		}
	}
	ss.mu.Lock()
	ss.roots.known, ss.roots.dirs = true, dirs
	ss.mu.Unlock()
}

// needsCwd reports whether a call of the session may land by its cwd: its
// server (on /mcp, any server) is scoped to a repository, worktree or
// directory. A stateless client is asked for its roots, a round trip, only
// then.
func (ss *session) needsCwd() bool {
	servers, err := ss.srv.b.ServersAt(ss.breqAt(ss.hdr.Cwd, "", nil))
	if err != nil {
		return true
	}
	for _, sv := range servers {
		if ss.server != "" && sv.Name != ss.server {
			continue
		}
		switch sv.Scope {
		case config.ScopeRepo, config.ScopeWorktree, config.ScopeCwd:
			return true
		}
	}
	return false
}
