package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// The stateless era: protocol version 2026-07-28 (SEP-2575). There is no
// initialize and no session: the client may probe with server/discover, and
// every request carries the client's protocol version, info and
// capabilities in _meta. A server that needs input from the client while
// serving a request (roots, elicitation, sampling) answers with a result of
// resultType "input_required" listing inputRequests; the client retries the
// same request with inputResponses and the requestState it was given
// (SEP-2322, multi round-trip).

// Era names, as Options.Era takes them and Session.Era reports them.
const (
	// EraStateless is the 2026-07-28 revision: server/discover, then
	// per-request _meta.
	EraStateless = "stateless"
	// EraHandshake is the initialize handshake of 2024-11-05 … 2025-11-25.
	EraHandshake = "handshake"
)

// DefaultProbeWait bounds the server/discover probe when Options.ProbeWait
// is 0. A stdio child silent that long fails Connect with ErrProbeUnanswered
// (see stateless.open): the caller opens a fresh child with Era
// EraHandshake, and remembers the era for the definition, so only a
// definition's first child pays the wait.
const DefaultProbeWait = 5 * time.Second

// ErrProbeUnanswered is matched (errors.Is) by the error of a Connect
// whose server/discover probe of a stdio child (Extras.OneProcess) got no
// answer within Options.ProbeWait. The child was not initialized (see stateless.open) and the transport is
// closed: open a fresh child with Era EraHandshake.
var ErrProbeUnanswered = errors.New("no answer to the server/discover probe")

// maxRounds bounds the input_required rounds of one request: a child that
// keeps asking ends the call with an error instead of looping forever.
const maxRounds = 10

// stateless is the 2026-07-28 era.
type stateless struct{}

func (stateless) name() string       { return EraStateless }
func (stateless) versions() []string { return []string{jsonrpc.StatelessVersion} }

// eraError says a child is not of an era: Connect tries the next one.
type eraError struct{ msg string }

func (e *eraError) Error() string { return e.msg }

// open probes with server/discover (spec 2026-07-28, basic/lifecycle:
// server/discover is mandatory for servers) and, when the child lists
// 2026-07-28 among its supportedVersions, makes s a stateless session. Its
// InitializeResult is then built from the discover result, in the shape of
// an initialize result (protocolVersion, capabilities, serverInfo,
// instructions), so that nothing above this package tells the eras apart.
//
// A stdio child silent to the probe for Options.ProbeWait is not
// initialized (a streamable HTTP server is: its probe was an exchange of
// its own, see Extras.OneProcess).
//
// Spec (2026-07-28, basic/transports/stdio, Backward Compatibility): "The
// server returns any other error, or does not respond within a reasonable
// timeout: the server is legacy. Fall back to the initialize handshake."
// But the probe is still pending in that child: a dual-era server that is
// merely slow (a cold start on a loaded machine) reads it later, and
// initialize on the same process then meets a server already serving
// 2026-07-28 (the go-sdk refuses it: `duplicate "initialize" received`)
// or opens a handshake session beside a stateless one, two eras in one
// process. So the fallback is left to the caller, on a fresh child that
// has seen no probe (Connect fails with ErrProbeUnanswered). A legacy
// child that refuses the probe with an error, the common case
// ("implementation-defined errors (commonly -32601 or -32602)"), has
// answered it, and is initialized at once on the same process.
func (st stateless) open(ctx context.Context, s *Session) (string, json.RawMessage, error) {
	meta, err := requestMeta(s.opts)
	if err != nil {
		return "", nil, err
	}
	wait := s.opts.ProbeWait
	if wait == 0 {
		wait = DefaultProbeWait
	}
	pctx := ctx
	if wait > 0 {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	s.meta = meta // the probe itself carries the _meta keys
	// Over HTTP the probe carries the version header too (a server
	// checks it against _meta); a probe that fails leaves the transport
	// as it was, with no version and no session.
	if s.x.SetProtocolVersion != nil {
		s.x.SetProtocolVersion(jsonrpc.StatelessVersion)
	}
	ok := false
	defer func() {
		if !ok && s.x.SetProtocolVersion != nil {
			s.x.SetProtocolVersion("")
		}
		if !ok && s.x.ForgetSession != nil {
			s.x.ForgetSession()
		}
	}()
	// cancel=false: a child of the handshake era may take a
	// notifications/cancelled before initialize for a protocol error.
	res, err := s.request(pctx, jsonrpc.MethodDiscover, nil, nil, false)
	if retryVersion(err) {
		res, err = s.request(pctx, jsonrpc.MethodDiscover, nil, nil, false)
	}
	if err != nil {
		s.meta = nil
		switch {
		case ctx.Err() != nil || pctx.Err() == nil:
		case s.x.OneProcess:
			// Not an eraError: this child is not offered initialize.
			return "", nil, fmt.Errorf("%w within %s", ErrProbeUnanswered, wait)
		default:
			// Over HTTP the probe was its own exchange: initialize
			// is another, with a session the probe never had.
			return "", nil, &eraError{fmt.Sprintf("no answer to server/discover within %s", wait)}
		}
		return "", nil, err
	}
	var d struct {
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      json.RawMessage            `json:"capabilities"`
		Instructions      json.RawMessage            `json:"instructions"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(res, &d); err != nil {
		s.meta = nil
		return "", nil, &eraError{fmt.Sprintf("server/discover result is not a DiscoverResult: %v", err)}
	}
	if !slices.Contains(d.SupportedVersions, jsonrpc.StatelessVersion) {
		s.meta = nil
		return "", nil, &eraError{fmt.Sprintf("child supports %s, not %s", strings.Join(d.SupportedVersions, ", "), jsonrpc.StatelessVersion)}
	}
	init := struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ServerInfo      json.RawMessage `json:"serverInfo,omitempty"`
		Instructions    json.RawMessage `json:"instructions,omitempty"`
	}{jsonrpc.StatelessVersion, d.Capabilities, d.Meta[jsonrpc.MetaServerInfo], d.Instructions}
	if len(bytes.TrimSpace(init.Capabilities)) == 0 || bytes.Equal(bytes.TrimSpace(init.Capabilities), []byte("null")) {
		init.Capabilities = json.RawMessage("{}")
	}
	out, err := json.Marshal(init)
	if err != nil {
		s.meta = nil
		return "", nil, &eraError{fmt.Sprintf("server/discover result: %v", err)}
	}
	ok = true
	return jsonrpc.StatelessVersion, out, nil
}

// retryVersion reports whether err refuses the probe's protocol version
// while listing it as supported (-32022, data.supported): the probe is
// sent once more, as is. Any other -32022 falls back to initialize.
//
// SEP-2575: a server refuses a protocol version it does not speak with
// -32022 and data {supported, requested}, and the client retries with a
// supported one (the conformance suite's check
// sep-2575-client-retry-supported-version) — here the one it sent, which
// the server lists: a server may refuse a first request for reasons of its
// own (the suite's request-metadata scenario refuses the first, whatever
// it says).
func retryVersion(err error) bool {
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeUnsupportedVersion {
		return false
	}
	var d struct {
		Supported []string `json:"supported"`
	}
	return json.Unmarshal(rpc.Data, &d) == nil && slices.Contains(d.Supported, jsonrpc.StatelessVersion)
}

// metaFor is the session's request _meta for a request made with ctx:
// s.meta, its capabilities narrowed to the caller's when ctx carries them
// (WithCallerCapabilities).
func (s *Session) metaFor(ctx context.Context) [][2][]byte {
	cc, ok := ctx.Value(callerCapsKey{}).(CallerCapabilities)
	if !ok {
		return s.meta
	}
	caps := []byte(`{`)
	sep := ""
	if s.opts.Root != "" {
		caps, sep = append(caps, `"roots":{}`...), ","
	}
	if e := bytes.TrimSpace(cc.Elicitation); len(e) > 0 && e[0] == '{' {
		caps = append(append(append(caps, sep...), `"elicitation":`...), e...)
		sep = ","
	}
	if cc.Sampling && s.opts.Sampling {
		caps = append(append(caps, sep...), `"sampling":{}`...)
	}
	caps = append(caps, '}')
	out := make([][2][]byte, len(s.meta), len(s.meta)+1)
	for i, kv := range s.meta {
		if string(kv[0]) == jsonrpc.MetaClientCapabilities {
			kv[1] = caps
		}
		out[i] = kv
	}
	if cc.LogLevel != "" {
		level, _ := json.Marshal(cc.LogLevel)
		out = append(out, [2][]byte{[]byte(jsonrpc.MetaLogLevel), level})
	}
	return out
}

// requestMeta is the _meta members every stateless request carries, as
// key/value pairs of raw JSON.
func requestMeta(opts Options) ([][2][]byte, error) {
	type info struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	in := info{Name: opts.ClientName, Version: opts.ClientVersion}
	if in.Name == "" {
		in.Name = "mcpx"
	}
	if in.Version == "" {
		in.Version = "dev"
	}
	ib, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	// The capabilities initialize declares (initializeParams): roots with
	// a root, elicitation always, sampling with Options.Sampling. The child
	// asks for them with an input_required result (inputResponse answers
	// it).
	caps := []byte(`{`)
	if opts.Root != "" {
		if _, err := newRoot(opts.Root); err != nil {
			return nil, err
		}
		caps = append(caps, `"roots":{},`...)
	}
	caps = append(caps, `"elicitation":{"form":{},"url":{}}`...)
	if opts.Sampling {
		caps = append(caps, `,"sampling":{}`...)
	}
	caps = append(caps, '}')
	return [][2][]byte{
		{[]byte(jsonrpc.MetaProtocolVersion), []byte(`"` + jsonrpc.StatelessVersion + `"`)},
		{[]byte(jsonrpc.MetaClientInfo), ib},
		{[]byte(jsonrpc.MetaClientCapabilities), caps},
	}, nil
}

// withRequestMeta returns params with meta's members set in params._meta,
// keeping the caller's other _meta members (and a progress token).
func withRequestMeta(params []byte, meta [][2][]byte) ([]byte, error) {
	if t := bytes.TrimSpace(params); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		params = []byte("{}")
	}
	m := []byte("{}")
	if v := jsonrpc.Member(params, `"_meta"`); v != nil && bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) {
		m = v
	}
	if fresh, ok := prependMembers(m, meta); ok {
		return jsonrpc.SetMember(params, "_meta", fresh)
	}
	var err error
	// setMember puts a new member first: in reverse, the keys read in
	// meta's order, before the caller's own.
	for _, kv := range slices.Backward(meta) {
		if m, err = jsonrpc.SetMember(m, string(kv[0]), kv[1]); err != nil {
			return nil, err
		}
	}
	return jsonrpc.SetMember(params, "_meta", m)
}

// prependMembers returns obj with meta's members put first, in meta's
// order, in one allocation: what setMember for each of them in reverse
// gives when obj has none of their keys (the usual case: no _meta, or a
// progress token). ok is false when obj has one of them (or is not an
// object): setMember then replaces it in place.
func prependMembers(obj []byte, meta [][2][]byte) (out []byte, ok bool) {
	start := jsonrpc.SkipSpace(obj, 0)
	if start >= len(obj) || obj[start] != '{' {
		return nil, false
	}
	clash := false
	if err := jsonrpc.Members(obj, func(k, _ []byte) {
		for _, kv := range meta {
			if len(k) == len(kv[0])+2 && string(k[1:len(k)-1]) == string(kv[0]) {
				clash = true
			}
		}
	}); err != nil || clash {
		return nil, false
	}
	n := len(obj)
	for _, kv := range meta {
		n += len(kv[0]) + len(kv[1]) + 4
	}
	out = make([]byte, 0, n)
	out = append(out, obj[:start+1]...)
	for i, kv := range meta {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(append(append(append(out, '"'), kv[0]...), `":`...), kv[1]...)
	}
	rest := obj[start+1:]
	if i := jsonrpc.SkipSpace(rest, 0); len(meta) > 0 && i < len(rest) && rest[i] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...), true
}

// Era returns the session's era: EraStateless or EraHandshake.
func (s *Session) Era() string {
	if s.meta != nil {
		return EraStateless
	}
	return EraHandshake
}

// requestRounds runs one request that may need input from the client: on a
// stateless session, while the child answers with resultType
// "input_required", each of its inputRequests is answered (inputResponse)
// and the request is sent again with inputResponses and the child's
// requestState. On a handshake session the child asks with its own
// requests instead (answer, in dispatch.go), and this is request.
func (s *Session) requestRounds(ctx context.Context, method string, params []byte, onProgress func(json.RawMessage)) (json.RawMessage, error) {
	res, err := s.request(ctx, method, params, onProgress, true)
	if err != nil || s.meta == nil {
		return res, err
	}
	for round := 1; ; round++ {
		if string(bytes.TrimSpace(jsonrpc.Member(res, `"resultType"`))) != `"input_required"` {
			return res, nil
		}
		if round > maxRounds {
			return nil, fmt.Errorf("calling %s: the child asked for input %d times; mcpx gives up after %d rounds", method, round, maxRounds)
		}
		responses, n, err := s.inputResponses(ctx, jsonrpc.Member(res, `"inputRequests"`))
		if err != nil {
			return nil, fmt.Errorf("calling %s: %w", method, err)
		}
		if n == 0 {
			// No requests: the child is shedding load; retry after a
			// pause that grows with each round.
			t := time.NewTimer(time.Duration(round) * 100 * time.Millisecond)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, fmt.Errorf("calling %s: %w", method, ctx.Err())
			}
		}
		if t := bytes.TrimSpace(params); len(t) == 0 || bytes.Equal(t, []byte("null")) {
			params = []byte("{}")
		}
		if params, err = jsonrpc.SetMember(params, "inputResponses", responses); err != nil {
			return nil, fmt.Errorf("calling %s: params: %w", method, err)
		}
		if st := jsonrpc.Member(res, `"requestState"`); st != nil {
			if params, err = jsonrpc.SetMember(params, "requestState", st); err != nil {
				return nil, fmt.Errorf("calling %s: params: %w", method, err)
			}
		}
		if res, err = s.request(ctx, method, params, onProgress, true); err != nil {
			return nil, err
		}
	}
}

// inputResponses answers an inputRequests object ({id: {method, params}})
// and returns the inputResponses object ({id: result}) and how many there
// were. The requests are answered concurrently, those that go to the
// caller told how many go together (InputRequest.Round), so that a client
// is asked them in one round as the child asked them.
func (s *Session) inputResponses(ctx context.Context, reqs []byte) ([]byte, int, error) {
	if t := bytes.TrimSpace(reqs); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return []byte("{}"), 0, nil
	}
	type input struct {
		id, key, method string
		params          []byte
		res             []byte
		err             error
	}
	var ins []*input
	err := jsonrpc.Members(reqs, func(id, req []byte) {
		method, _ := jsonrpc.Unquote(jsonrpc.Member(req, `"method"`))
		key, _ := jsonrpc.Unquote(id)
		ins = append(ins, &input{id: string(id), key: key, method: method, params: jsonrpc.Member(req, `"params"`)})
	})
	if err != nil {
		return nil, 0, err
	}
	round := 0
	if inputHandlerOf(ctx) != nil {
		for _, in := range ins {
			if s.asksCaller(in.method) {
				round++
			}
		}
	}
	var wg sync.WaitGroup
	for _, in := range ins {
		wg.Go(func() { in.res, in.err = s.inputResponse(ctx, in.key, in.method, in.params, round) })
	}
	wg.Wait()
	out := []byte{'{'}
	for i, in := range ins {
		if in.err != nil {
			return nil, 0, in.err
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(append(append(out, in.id...), ':'), in.res...)
	}
	return append(out, '}'), len(ins), nil
}

// asksCaller reports whether a stateless child's input request of method
// goes to the call's input handler, when it has one.
func (s *Session) asksCaller(method string) bool {
	return method == jsonrpc.MethodElicit || method == jsonrpc.MethodSample || (method == jsonrpc.MethodRootsList && s.opts.CallerRoots)
}

// errInputUnsupported is what a stateless child asking for input mcpx
// cannot give gets: its call fails with it.
var errInputUnsupported = errors.New("mcpx cannot answer it for a 2026-07-28 child")

// inputResponse answers one input request of a stateless child: roots/list
// with the instance root, as the handshake era's roots/list request is
// answered (rootsResult), or with Options.CallerRoots the caller's; elicitation and sampling by the call's input
// handler, if the caller streams (WithInputHandler), as in the handshake
// era. Without a handler, or when it fails, elicitation is declined
// (InputRefusal) and sampling fails the call: an input_required round has
// no error answer for one request.
func (s *Session) inputResponse(ctx context.Context, id, method string, params []byte, round int) ([]byte, error) {
	switch method {
	case jsonrpc.MethodRootsList:
		if h := inputHandlerOf(ctx); h != nil && s.opts.CallerRoots {
			res, err := h(ctx, InputRequest{Method: method, Params: bytes.Clone(params), ID: id, Round: round})
			if err == nil && json.Valid(res) {
				return res, nil
			}
			s.log.Debug("the caller's roots were not had; answering with the instance root", "err", err)
		}
		return rootsResult(s.opts)
	case jsonrpc.MethodElicit, jsonrpc.MethodSample:
		why := "mcpx cannot ask the caller: it is not streaming the call, so it cannot be asked for input"
		if h := inputHandlerOf(ctx); h != nil {
			res, err := h(ctx, InputRequest{Method: method, Params: bytes.Clone(params), ID: id, Round: round})
			switch {
			case err != nil:
				why = err.Error()
			case !json.Valid(res):
				why = errBadInputResult.Error()
			default:
				return res, nil
			}
		}
		if res, rerr := InputRefusal(method, why); rerr == nil {
			return res, nil
		}
		return nil, fmt.Errorf("the child asked for %s (%s): %w", method, why, errInputUnsupported)
	default:
		return nil, fmt.Errorf("the child asked for %s: %w", method, errInputUnsupported)
	}
}

// uncountedKey marks a request's context: the request is not counted in
// InFlight (the subscriptions/listen request lasts as long as the session
// and is no call).
type uncountedKey struct{}

// subscribe opens the stateless era's subscriptions/listen stream (spec
// 2026-07-28, SEP-2575: list_changed notifications reach a client only on
// it) for the lists whose listChanged the child declared, so that its
// cached listings are dropped when they change, as a handshake-era child's
// are. The request lasts as long as the session; the child's notifications
// arrive while it is pending (first notifications/subscriptions/
// acknowledged, then each list_changed), and it ends when the session
// does (or the child ends it). Nothing is opened for a child that declares
// no listChanged.
func (s *Session) subscribe() {
	var caps struct {
		Capabilities struct {
			Tools     struct{ ListChanged bool } `json:"tools"`
			Prompts   struct{ ListChanged bool } `json:"prompts"`
			Resources struct{ ListChanged bool } `json:"resources"`
		} `json:"capabilities"`
	}
	json.Unmarshal(s.initResult, &caps) //nolint:errcheck // no capabilities, no subscription
	c := caps.Capabilities
	if !c.Tools.ListChanged && !c.Prompts.ListChanged && !c.Resources.ListChanged {
		return
	}
	params, err := json.Marshal(map[string]any{"notifications": map[string]bool{
		"toolsListChanged": c.Tools.ListChanged, "promptsListChanged": c.Prompts.ListChanged,
		"resourcesListChanged": c.Resources.ListChanged,
	}})
	if err != nil {
		return
	}
	s.replies.Add(1)
	go func() {
		defer s.replies.Done()
		ctx := context.WithValue(s.ctx, uncountedKey{}, true)
		// cancel=false: it ends with the session, whose transport is
		// closing; nothing is left to tell the child.
		_, err := s.request(ctx, jsonrpc.MethodListen, params, nil, false)
		if err != nil && s.ctx.Err() == nil {
			s.log.Debug("mcp child's subscriptions/listen ended", "err", err)
		}
	}()
}
