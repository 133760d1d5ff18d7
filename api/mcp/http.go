package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/internal/sse"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// The Streamable HTTP transport (spec 2025-11-25 basic/transports, and the
// stateless 2026-07-28 revision): POST carries one JSON-RPC message, GET
// opens the session's stream, DELETE ends the session.

// HeaderLastEventID is SSE's, which resumes a stream; MCP's own headers
// are package jsonrpc's.
const HeaderLastEventID = "Last-Event-Id"

// Request is what the API tells the endpoint of one HTTP request: who is
// calling (authenticated), the caller context its headers declared, and
// the server of /mcp/{server} ("" = the aggregate /mcp).
type Request struct {
	Caller  broker.Caller
	Context broker.CallContext
	Server  string
	// Mode is the tool surface the client asked for (/mcp?mode=):
	// "tools", "code", "both", or "" for its grant's or the config's.
	Mode string
	// MaxBody bounds the request body; 0 = 4 MiB.
	MaxBody int64
}

// keepAlive is how often an idle SSE stream sends a comment.
const keepAlive = 15 * time.Second

// ServeHTTP serves one request of the endpoint for req. The browser guard
// (Origin, Host) is the API's; this refuses what the transport forbids.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request, req Request) {
	switch r.Method {
	case http.MethodPost:
		s.post(w, r, req)
	case http.MethodGet:
		s.getStream(w, r, req)
	case http.MethodDelete:
		s.deleteSession(w, r, req)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		httpError(w, http.StatusMethodNotAllowed, "use POST, GET or DELETE")
	}
}

// httpError answers a transport-level failure: a JSON-RPC error without an
// id, as the specification's examples do.
func httpError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(rpcErrorMsg(nil, jsonrpc.CodeInvalidRequest, msg, nil)) //nolint:errcheck // the client is gone
}

func (s *Server) post(w http.ResponseWriter, r *http.Request, req Request) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		// Also the browser guard's half: a web page cannot send this
		// Content-Type across origins without a preflight, and mcpx never
		// answers one.
		httpError(w, http.StatusUnsupportedMediaType, "the body must be Content-Type: application/json")
		return
	}
	limit := req.MaxBody
	if limit <= 0 {
		limit = 4 << 20
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			httpError(w, http.StatusRequestEntityTooLarge, "the message is larger than the endpoint accepts")
			return
		}
		httpError(w, http.StatusBadRequest, "cannot read the body")
		return
	}
	msg, err := parseMessage(body)
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(rpcErrorMsg(nil, jsonrpc.CodeParseError, err.Error(), nil)) //nolint:errcheck // the client is gone
		return
	}

	if status, bad := checkHeaders(r, msg); bad != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(bad) //nolint:errcheck // the client is gone
		return
	}
	var ss *session
	if id := r.Header.Get(jsonrpc.HeaderSessionID); id != "" {
		if ss = s.lookup(id, req); ss == nil {
			httpError(w, http.StatusNotFound, "no such session (it ended or never was): initialize again")
			return
		}
		if msg.Method == jsonrpc.MethodInitialize {
			s.writeJSON(w, rpcErrorMsg(msg.ID, jsonrpc.CodeInvalidRequest, "the session is already initialized", nil))
			return
		}
		ss.touch()
	} else {
		switch {
		case msg.Method == jsonrpc.MethodInitialize:
			s.initialize(w, r, req, msg)
			return
		case statelessVersion(r, msg) != "":
			ss = s.statelessSession(req, msg)
			ss.header = r.Header
		case msg.IsRequest() && msg.Method == jsonrpc.MethodPing:
			s.writeJSON(w, resultMsg(msg.ID, json.RawMessage(`{}`)))
			return
		case msg.IsRequest() && msg.Method == jsonrpc.MethodDiscover:
			// A client probing for the stateless era without saying its
			// version: answer, so that it can choose.
			ss = s.statelessSession(req, msg)
		default:
			httpError(w, http.StatusBadRequest, "no "+jsonrpc.HeaderSessionID+" header: send initialize first, or a 2026-07-28 request with its _meta")
			return
		}
	}

	switch {
	case msg.IsResponse():
		if !ss.answered(msg.idString(), body) {
			s.log.Debug("mcp response to no request of ours", "session", ss.id, "id", msg.idString())
		}
		w.WriteHeader(http.StatusAccepted)
	case msg.IsNotification():
		ss.notification(msg)
		w.WriteHeader(http.StatusAccepted)
	case msg.IsRequest():
		s.request(w, r, ss, msg)
	default:
		s.writeJSON(w, rpcErrorMsg(msg.ID, jsonrpc.CodeInvalidRequest, "not a JSON-RPC request, notification or response", nil))
	}
}

// request runs one of the client's requests and answers it: as plain JSON
// when the response is all there is to send, else as an SSE stream of the
// request's messages ending with the response. The call runs on the
// connection's goroutine, so the common answer, the response alone, costs
// no hand-off; the first message before the response starts a pump that
// streams them while the call goes on.
func (s *Server) request(w http.ResponseWriter, r *http.Request, ss *session, msg *message) {
	st := ss.newStream()
	ctx, cancel := ss.startCall(msg)
	defer cancel()
	var state atomic.Int32 // answerInline, then answerStream or answerJSON
	streamed := make(chan bool, 1)
	st.onAdd = func() {
		if state.CompareAndSwap(answerInline, answerStream) {
			go func() { streamed <- s.streamCall(w, r, ss, st, cancel) }()
		}
	}
	// A client that goes before anything was sent cancels its call; a
	// stateless one always does (it cannot resume).
	stop := context.AfterFunc(r.Context(), func() {
		if ss.id == "" || state.Load() != answerStream {
			cancel()
		}
	})
	resp := ss.handle(ctx, st, msg)
	stop()
	if state.CompareAndSwap(answerInline, answerJSON) {
		ss.dropStream(st)
		if r.Context().Err() != nil {
			return
		}
		status := http.StatusOK
		if ss.id == "" {
			status = errorStatus(resp)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(resp) //nolint:errcheck // the client is gone
		return
	}
	st.end(resp)
	if <-streamed || ss.id == "" {
		ss.dropStream(st)
		return
	}
	// The connection went before the response was sent: the stream stays
	// for a resume (GET with Last-Event-ID) until the grace ends.
	s.wg.Go(func() {
		s.awaitResume(ss, st, s.opts.ResumeGrace)
		ss.dropStream(st)
	})
}

// How request answers: inline until the first message before the response,
// then as a stream; or as plain JSON when the response came first.
const (
	answerInline int32 = iota
	answerStream
	answerJSON
)

// streamCall streams st to w while request's call runs, and reports
// whether the connection had all of it. A session's call whose connection
// went goes on for a resume until the stream has been without one for the
// grace, then is cancelled; streamCall returns when the call has ended.
func (s *Server) streamCall(w http.ResponseWriter, r *http.Request, ss *session, st *stream, cancel func()) bool {
	if st.pump(r.Context(), w, 0, keepAlive) {
		return true
	}
	if ss.id == "" {
		cancel()
		return false
	}
	grace := s.opts.ResumeGrace
	t := time.NewTicker(max(grace/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-st.fin:
			return false
		case now := <-t.C:
			if st.abandoned(now, grace) {
				cancel()
				<-st.fin
				return false
			}
		}
	}
}

// awaitResume waits until the ended stream st has been delivered whole,
// has been without a connection for grace, or its session ended.
func (s *Server) awaitResume(ss *session, st *stream, grace time.Duration) {
	t := time.NewTicker(max(grace/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ss.ctx.Done():
			return
		case now := <-t.C:
			if st.delivered() || st.abandoned(now, grace) {
				return
			}
		}
	}
}

func (s *Server) writeJSON(w http.ResponseWriter, v any) {
	var b []byte
	switch v := v.(type) {
	case []byte:
		b = v
	case json.RawMessage:
		b = v
	default:
		b, _ = json.Marshal(v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b) //nolint:errcheck // the client is gone
}

// getStream opens the session's GET stream, or resumes a stream from
// Last-Event-ID.
func (s *Server) getStream(w http.ResponseWriter, r *http.Request, req Request) {
	if !acceptsEvents(r) {
		httpError(w, http.StatusNotAcceptable, "the GET stream is text/event-stream: send Accept: text/event-stream")
		return
	}
	ss := s.sessionOf(w, r, req, http.StatusMethodNotAllowed, "a stateless client has no stream to open")
	if ss == nil {
		return
	}
	st, from := ss.get, ss.get.unsent()
	if last := r.Header.Get(HeaderLastEventID); last != "" {
		sid, seq, ok := parseEventID(last)
		if st2 := ss.stream(sid); ok && st2 != nil {
			st, from = st2, seq+1
		} else if ok && sid != ss.get.id && ss.get.attached() && ss.hold() {
			defer ss.unhold()
			s.holdEnded(w, r, ss, last)
			return
		}
	}
	ctx := r.Context()
	if st == ss.get {
		// The GET stream ends with the session.
		var cancel func()
		ctx, cancel = mergeDone(ctx, ss.ctx)
		defer cancel()
	}
	if st.pump(ctx, w, from, keepAlive) && st != ss.get {
		ss.dropStream(st)
	}
}

// holdEnded answers a resume of a POST stream that ended and was
// delivered whole (so was dropped) while the session's GET stream has a
// connection: nothing is left to replay, and taking the GET stream over
// would end the client's own GET connection, which it would resume in
// turn — two connections ending each other once a second for the rest of
// the session. The TypeScript SDK resumes so after every JSON-RPC error
// that came on a stream (it counts only results as answers). The resume
// gets an open stream with nothing on it (its priming event repeats the
// client's Last-Event-ID) until the client or the session ends it.
func (s *Server) holdEnded(w http.ResponseWriter, r *http.Request, ss *session, last string) {
	ctx, cancel := mergeDone(r.Context(), ss.ctx)
	defer cancel()
	write := openSSE(w)
	if !write(sse.AppendEvent([]byte("id: "+last+"\n"+retryField), "", nil)) {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if !write(sse.AppendComment(nil, "keep-alive")) {
				return
			}
		}
	}
}

// sessionOf is the session r names for req's caller; without one it
// answers r (status, why there must be one: 405 also says Allow: POST) or
// 404 and returns nil.
func (s *Server) sessionOf(w http.ResponseWriter, r *http.Request, req Request, status int, why string) *session {
	id := r.Header.Get(jsonrpc.HeaderSessionID)
	if id == "" {
		if status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", "POST")
		}
		httpError(w, status, "no "+jsonrpc.HeaderSessionID+" header: "+why)
		return nil
	}
	ss := s.lookup(id, req)
	if ss == nil {
		httpError(w, http.StatusNotFound, "no such session (it ended or never was): initialize again")
	}
	return ss
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request, req Request) {
	if r.Header.Get(jsonrpc.HeaderSessionID) == "" && req.Context.Session != "" {
		// A stateless client's caller session (Mcpx-Session; mcpx mcp
		// holds one for its client): its session-scoped children stop.
		if err := s.b.EndSession(r.Context(), req.Caller, req.Context.Session); err != nil {
			s.log.Warn("ending a stateless client's session", "err", err)
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	ss := s.sessionOf(w, r, req, http.StatusBadRequest, "DELETE ends a session")
	if ss == nil {
		return
	}
	s.end(r.Context(), ss, "the client ended it")
	w.WriteHeader(http.StatusNoContent)
}

func acceptsEvents(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err == nil && (mt == "text/event-stream" || mt == "*/*") {
				return true
			}
		}
	}
	return false
}

// statelessVersion is the 2026-07-28 version a request declares (header or
// _meta); "" if it declares none of that era.
func statelessVersion(r *http.Request, msg *message) string {
	if v := r.Header.Get(jsonrpc.HeaderProtocolVersion); v == jsonrpc.StatelessVersion {
		return v
	}
	if msg.meta(jsonrpc.MetaProtocolVersion) == jsonrpc.StatelessVersion {
		return jsonrpc.StatelessVersion
	}
	return ""
}

// initialize opens a session of the handshake era.
func (s *Server) initialize(w http.ResponseWriter, r *http.Request, req Request, msg *message) {
	if !msg.IsRequest() {
		httpError(w, http.StatusBadRequest, "initialize must be a request")
		return
	}
	ss := s.newSession(newID(), req.Caller, req.Server, req.Context)
	ss.mode = req.Mode
	res, rerr := ss.initialize(r.Context(), msg.Params)
	if rerr != nil {
		s.writeJSON(w, jsonrpc.AppendError(nil, msg.ID, rerr))
		return
	}
	err := s.add(ss)
	if err != nil {
		ss.cancel()
	}
	switch err {
	case nil:
	case errTooMany:
		httpError(w, http.StatusTooManyRequests, fmt.Sprintf("this caller has %d MCP sessions open, the most it may: end some (DELETE) or let idle ones expire", MaxSessionsPerCaller))
		return
	default:
		httpError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	w.Header().Set(jsonrpc.HeaderSessionID, ss.id)
	s.writeJSON(w, resultMsg(msg.ID, res))
}

// statelessSession is the session of one stateless request.
func (s *Server) statelessSession(req Request, msg *message) *session {
	ss := s.newSession("", req.Caller, req.Server, req.Context)
	ss.mode = req.Mode
	ss.version = jsonrpc.StatelessVersion
	ss.caps = parseCaps(json.RawMessage(msg.metaRaw(jsonrpc.MetaClientCapabilities)))
	ss.clientName = clientName(msg.metaRaw(jsonrpc.MetaClientInfo))
	return ss
}

// mergeDone returns a context of ctx that is also done when other is.
func mergeDone(ctx, other context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(other, cancel)
	return ctx, func() { stop(); cancel() }
}

// removedMethods are the methods the 2026-07-28 revision removed: a
// stateless client that sends one is told 404 and -32601.
var removedMethods = map[string]bool{jsonrpc.MethodInitialize: true, jsonrpc.MethodPing: true, jsonrpc.MethodSetLevel: true,
	jsonrpc.MethodResourcesSubscribe: true, jsonrpc.MethodResourcesUnsubscribe: true, jsonrpc.MethodTasksResult: true, jsonrpc.MethodTasksList: true}

// named are the methods whose Mcp-Name header a stateless request must
// carry, and the params member it mirrors.
var named = map[string]string{jsonrpc.MethodToolsCall: "name", jsonrpc.MethodPromptsGet: "name", jsonrpc.MethodResourcesRead: "uri",
	jsonrpc.MethodTasksGet: "taskId", jsonrpc.MethodTasksUpdate: "taskId", jsonrpc.MethodTasksCancel: "taskId"}

// checkHeaders refuses, with its HTTP status and error response, a request
// whose MCP-Protocol-Version names a version mcpx does not speak, and a
// stateless (2026-07-28) request whose version header, _meta and standard
// headers (Mcp-Method, Mcp-Name) are missing or disagree (SEP-2575,
// SEP-2243), or that names a method the revision removed. A request of the
// handshake era is refused only for a header that disagrees with its body:
// those clients send neither.
func checkHeaders(r *http.Request, msg *message) (int, []byte) {
	hv, mv := r.Header.Get(jsonrpc.HeaderProtocolVersion), msg.meta(jsonrpc.MetaProtocolVersion)
	bad := func(status, code int, text string, data json.RawMessage) (int, []byte) {
		return status, rpcErrorMsg(msg.ID, code, text, data)
	}
	unsupported := func(v string) (int, []byte) {
		data, _ := json.Marshal(map[string]any{"supported": jsonrpc.SupportedVersions(), "requested": v})
		return bad(http.StatusBadRequest, jsonrpc.CodeUnsupportedVersion, "unsupported protocol version "+v, data)
	}
	if hv != "" && hv != jsonrpc.StatelessVersion && !jsonrpc.IsHandshakeVersion(hv) { // jsonrpc.SupportedVersions, without building it
		return unsupported(hv)
	}
	method, name := r.Header.Get(jsonrpc.HeaderMethod), r.Header.Get(jsonrpc.HeaderName)
	modern := msg.IsRequest() && r.Header.Get(jsonrpc.HeaderSessionID) == "" && (hv == jsonrpc.StatelessVersion || mv != "")
	want := "" // read only when a check below needs it
	if k := named[msg.Method]; k != "" && (modern || name != "") {
		p, _ := msg.params()
		want = p.str(k)
	}
	if modern {
		switch {
		case hv == "":
			return bad(http.StatusBadRequest, jsonrpc.CodeHeaderMismatch, "a request carrying _meta "+jsonrpc.MetaProtocolVersion+" needs the "+jsonrpc.HeaderProtocolVersion+" header", nil)
		case mv == "":
			return bad(http.StatusBadRequest, jsonrpc.CodeInvalidParams, "missing or invalid _meta "+jsonrpc.MetaProtocolVersion, nil)
		case hv != mv:
			return bad(http.StatusBadRequest, jsonrpc.CodeHeaderMismatch, jsonrpc.HeaderProtocolVersion+" "+hv+" does not match _meta "+jsonrpc.MetaProtocolVersion+" "+mv, nil)
		case mv != jsonrpc.StatelessVersion:
			return unsupported(mv)
		case msg.metaRaw(jsonrpc.MetaClientCapabilities) == nil:
			return bad(http.StatusBadRequest, jsonrpc.CodeInvalidParams, "missing _meta "+jsonrpc.MetaClientCapabilities, nil)
		case method == "":
			return bad(http.StatusBadRequest, jsonrpc.CodeHeaderMismatch, "a 2026-07-28 request needs the "+jsonrpc.HeaderMethod+" header", nil)
		case named[msg.Method] != "" && want != "" && name == "":
			return bad(http.StatusBadRequest, jsonrpc.CodeHeaderMismatch, msg.Method+" needs the "+jsonrpc.HeaderName+" header", nil)
		case removedMethods[msg.Method]:
			return bad(http.StatusNotFound, jsonrpc.CodeMethodNotFound, msg.Method+" was removed in "+jsonrpc.StatelessVersion, nil)
		}
	}
	if method != "" && msg.Method != "" && method != msg.Method {
		return bad(http.StatusBadRequest, jsonrpc.CodeHeaderMismatch, jsonrpc.HeaderMethod+" "+method+" does not match the body's method "+msg.Method, nil)
	}
	if name != "" && want != "" && decodeHeader(name) != want {
		return bad(http.StatusBadRequest, jsonrpc.CodeHeaderMismatch, jsonrpc.HeaderName+" does not match the body's "+named[msg.Method], nil)
	}
	return 0, nil
}

// decodeHeader reads a standard header's value: plain, or
// "=?base64?<value>?=" for a value that is not plain ASCII (SEP-2243).
func decodeHeader(v string) string {
	if rest, ok := strings.CutPrefix(v, "=?base64?"); ok {
		if b64, ok := strings.CutSuffix(rest, "?="); ok {
			if b, err := base64.StdEncoding.DecodeString(b64); err == nil {
				return string(b)
			}
		}
	}
	return v
}

// errorStatus is the HTTP status of a stateless request's error response
// (2026-07-28): 404 for a method not found, 400 for invalid params, an
// unsupported version or a missing capability, else 200.
func errorStatus(resp []byte) int {
	var r struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(resp, &r) != nil || r.Error == nil {
		return http.StatusOK
	}
	switch r.Error.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, jsonrpc.CodeUnsupportedVersion, jsonrpc.CodeMissingCapability, jsonrpc.CodeHeaderMismatch:
		return http.StatusBadRequest
	}
	return http.StatusOK
}
