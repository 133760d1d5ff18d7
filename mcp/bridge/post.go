package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/mcp/jsonrpc"
	"mcpx.dev/mcpx/wire"
)

// The client's messages, POSTed one each (spec
// basic/transports#sending-messages-to-the-server).

// Streamable HTTP's headers beside MCP's own (package jsonrpc's).
const (
	headerLastEventID = "Last-Event-ID"
	acceptPost        = "application/json, text/event-stream"
)

// dispatch relays one line from the client. It returns once the request
// is on its way (written, or failed), so that messages reach the server in
// the order the client wrote them; the answer is awaited on its own.
func (b *bridge) dispatch(line []byte) {
	e, batch, err := parse(line)
	if err != nil {
		b.out.write(errorResponse(nil, jsonrpc.CodeParseError, "parse error: the line is not JSON", nil))
		return
	}
	if !batch {
		line = b.fromClient(line, &e)
	}
	ctx, cancel := context.WithCancel(b.ctx)
	done := func() {}
	if e.IsRequest() {
		done = b.inflight.Add(e.ID, cancel)
	}
	sent := make(chan struct{})
	var once sync.Once
	onSent := func() { once.Do(func() { close(sent) }) }
	b.requests.Add(1)
	go func() {
		defer b.requests.Done()
		defer cancel()
		defer onSent()
		b.relay(ctx, line, &e, onSent)
		done()
	}()
	<-sent
}

// fromClient keeps what the relay needs of a client's message and
// returns the message to send: the initialize and initialized to replay
// for a lost session; the client's roots, mapped to the server's side of
// the files (Options.MapPath).
func (b *bridge) fromClient(msg []byte, e *jsonrpc.Message) []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case e.Method == jsonrpc.MethodInitialize && e.IsRequest():
		b.initReq = msg
	case e.Method == jsonrpc.MethodInitialized:
		b.initNote = msg
	case e.IsRequest():
		if v := metaProtocolVersion(e); v != "" {
			b.metaVersion = v
		}
	}
	switch {
	case e.IsResponse():
		method := b.asked[string(e.ID)]
		delete(b.asked, string(e.ID))
		if method == jsonrpc.MethodRootsList && b.opts.MapPath != nil && len(e.Result) > 0 {
			res, dropped := mapRoots(e.Result, b.opts.MapPath)
			b.warnUnmappedLocked(dropped)
			return replaceMember(msg, "result", res)
		}
	case e.IsRequest() && b.opts.MapPath != nil:
		if params, dropped, ok := mapInputResponses(e.Params, b.opts.MapPath); ok {
			b.warnUnmappedLocked(dropped)
			e.Params = params
			return replaceMember(msg, "params", params)
		}
	}
	return msg
}

// eraVersion is the version for a message that names none, outside a
// session: a stateless client's notifications carry no _meta (SEP-2575
// defines it for requests), so they go with the version of its last
// request.
func (b *bridge) eraVersion() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.metaVersion
}

func (b *bridge) warnUnmappedLocked(dirs []string) {
	for _, d := range dirs {
		if !b.warned["root "+d] {
			b.warned["root "+d] = true
			b.log.Warn("mcp: leaving out a root no path mapping covers: the broker cannot see this machine's files", "root", d)
		}
	}
}

// relay POSTs one message and relays the answer. A 404 for a session
// means the server lost it: the session is recovered and a request sent
// once more.
func (b *bridge) relay(ctx context.Context, msg []byte, e *jsonrpc.Message, onSent func()) {
	if e.Method == jsonrpc.MethodInitialized {
		b.awaitListening(ctx)
	}
	sent := time.Now()
	resp, sess, err := b.post(ctx, msg, e, onSent)
	if err != nil && b.restart(ctx, err, sent) {
		resp, sess, err = b.post(ctx, msg, e, nil)
	}
	if err != nil {
		b.failed(ctx, e, err)
		return
	}
	if resp.StatusCode == http.StatusNotFound && sess != "" && e.Method != jsonrpc.MethodInitialize {
		body := readBody(resp, b.opts.MaxMessage)
		resp.Body.Close()
		if rpcErrorBody(body) {
			b.refused(e, resp, body)
			return
		}
		if !e.IsRequest() {
			// What was meant for the lost session (an answer to its
			// request, a notification) means nothing to a new one; the
			// next request opens it.
			b.log.Info("mcp: dropping a message for a session the server lost", "method", e.Method)
			return
		}
		if err := b.recoverSession(ctx, sess); err != nil {
			b.failed(ctx, e, err)
			return
		}
		if resp, _, err = b.post(ctx, msg, e, nil); err != nil {
			b.failed(ctx, e, err)
			return
		}
	}
	defer resp.Body.Close()
	b.answer(ctx, resp, e)
}

// restart starts the endpoint's server again (Options.Restart) if err,
// of a request sent at the time sent, says it could not be reached, and
// reports whether it is running again. Requests that failed together
// share one restart: one sent before the last restart ended is sent again
// without another.
func (b *bridge) restart(ctx context.Context, err error, sent time.Time) bool {
	var unreachable *client.UnreachableError
	if b.opts.Restart == nil || !errors.As(err, &unreachable) || ctx.Err() != nil {
		return false
	}
	b.restarts.Lock()
	defer b.restarts.Unlock()
	if b.restarted.After(sent) {
		return true
	}
	b.log.Debug("mcp: the broker is unreachable; starting it again", "err", err)
	if err := b.opts.Restart(ctx); err != nil {
		b.log.Warn("mcp: starting the broker again failed", "err", err)
		return false
	}
	b.restarted = time.Now()
	return true
}

// post sends msg with the session's headers; sess is the session it was
// sent in ("" = none). onSent (nil = none) is called once the request is
// written, or could not be.
func (b *bridge) post(ctx context.Context, msg []byte, e *jsonrpc.Message, onSent func()) (resp *http.Response, sess string, err error) {
	if onSent == nil {
		onSent = func() {}
	}
	defer onSent() // also when it could not be written
	b.mu.Lock()
	sess, version := b.session, b.version
	b.mu.Unlock()
	if e.Method == jsonrpc.MethodInitialize {
		sess, version = "", "" // a new session
	}
	h := b.header(sess, version, e)
	h.Set("Content-Type", wire.MediaJSON)
	h.Set("Accept", acceptPost)
	for attempt := 1; ; attempt++ {
		var reused bool
		tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			GotConn:      func(i httptrace.GotConnInfo) { reused = i.Reused },
			WroteRequest: func(httptrace.WroteRequestInfo) { onSent() },
		})
		resp, err = b.opts.Client.Forward(tctx, http.MethodPost, b.opts.Path, bytes.NewReader(msg), h)
		// A kept-alive connection the server closed meanwhile (a daemon
		// that restarted) fails before any answer: send again, as
		// browsers do, until a new connection is dialled (each failure
		// drops a dead one from the pool). Go's transport does so itself
		// only for requests it knows to be idempotent.
		if err == nil || !reused || attempt > maxResends || ctx.Err() != nil {
			return resp, sess, err
		}
		b.log.Debug("mcp: resending a request whose kept-alive connection broke", "method", e.Method, "err", err)
	}
}

// maxResends bounds the resending of a request whose kept-alive
// connection broke: client keeps at most 4 idle connections.
const maxResends = 4

// header is what every request of the session carries: Options.Header,
// the session id, the protocol version (a stateless request's own, from
// its _meta, else the negotiated one, else a stateless client's last) and,
// from the stateless era on, the standard headers of e (nil: none):
// Mcp-Method, Mcp-Name, Mcp-Param-* (package jsonrpc).
func (b *bridge) header(sess, version string, e *jsonrpc.Message) http.Header {
	h := b.opts.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set(wire.HeaderClient, ClientName)
	if e != nil {
		if v := metaProtocolVersion(e); v != "" {
			version = v
		}
	}
	if version == "" && (e == nil || e.Method != jsonrpc.MethodInitialize) {
		version = b.eraVersion()
	}
	if version != "" {
		h.Set(jsonrpc.HeaderProtocolVersion, version)
	}
	if sess != "" {
		h.Set(jsonrpc.HeaderSessionID, sess)
	} else if b.own != "" && e != nil && e.Method != jsonrpc.MethodInitialize {
		// A stateless client: the bridge's own session stands for it.
		h.Set(wire.HeaderSession, b.own)
		b.mu.Lock()
		b.ownUsed = true
		b.mu.Unlock()
	}
	if e != nil && version >= jsonrpc.StatelessVersion {
		jsonrpc.SetHeaders(h, e.Method, e.Params, b.toolOf)
	}
	return h
}

// toolOf is the Tool object of a tool whose arguments map to headers
// (jsonrpc.HasParamHeaders), from the client's last tools/list; nil if none.
func (b *bridge) toolOf(name string) json.RawMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tools[name]
}

// keepTools keeps the tools of a tools/list result that map arguments to
// headers, for the Mcp-Param- headers of their calls.
func (b *bridge) keepTools(result json.RawMessage) {
	var r struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(result, &r) != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range r.Tools {
		var n struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(t, &n) == nil && jsonrpc.HasParamHeaders(t) {
			b.tools[n.Name] = t
		}
	}
}

// answer relays the server's answer to e: nothing (202), a JSON body, or
// an SSE stream; an error status becomes the request's error.
func (b *bridge) answer(ctx context.Context, resp *http.Response, e *jsonrpc.Message) {
	if resp.StatusCode >= 400 {
		b.refused(e, resp, readBody(resp, b.opts.MaxMessage))
		return
	}
	if e.Method == jsonrpc.MethodInitialize {
		if sess := resp.Header.Get(jsonrpc.HeaderSessionID); sess != "" {
			b.mu.Lock()
			b.session = sess
			b.mu.Unlock()
		}
	}
	if resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent {
		b.accepted(e)
		return
	}
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch media {
	case wire.MediaJSON:
		body := readBody(resp, b.opts.MaxMessage)
		if len(bytes.TrimSpace(body)) > 0 {
			b.fromServer(body, e)
		}
	case wire.MediaEventStream:
		b.relayStream(ctx, resp, e)
	default:
		if e.IsRequest() {
			b.out.write(errorResponse(e.ID, jsonrpc.CodeServerError,
				fmt.Sprintf("the MCP endpoint answered with %q, neither JSON nor an event stream", media), nil))
		}
	}
}

// accepted follows up a message the server took (202): a cancelled
// request's own POST is abandoned (the server need not answer it).
func (b *bridge) accepted(e *jsonrpc.Message) {
	switch e.Method {
	case jsonrpc.MethodCancelled:
		b.inflight.Cancelled(e.Params)
	}
}

// fromServer writes one of the server's messages to the client and
// reports whether it answers forCall (nil: none). The server's requests
// are remembered until the client answers them (their roots are mapped);
// the initialize result gives the session's protocol version.
func (b *bridge) fromServer(msg []byte, forCall *jsonrpc.Message) (answered bool) {
	m := compact(msg)
	if m == nil {
		b.log.Warn("mcp: dropping a message from the server that is not JSON", "bytes", len(msg))
		return false
	}
	e, batch, err := parse(m)
	if err == nil && !batch {
		switch {
		case e.IsRequest():
			b.mu.Lock()
			b.asked[string(e.ID)] = e.Method
			b.mu.Unlock()
		case e.IsResponse() && forCall != nil && forCall.IsRequest() && string(e.ID) == string(forCall.ID):
			answered = true
			switch forCall.Method {
			case jsonrpc.MethodInitialize:
				b.negotiated(e.Result)
				b.startListening()
			case jsonrpc.MethodToolsList:
				b.keepTools(e.Result)
			}
		}
	}
	b.out.write(m)
	return answered
}

// negotiated keeps the protocol version of an initialize result.
func (b *bridge) negotiated(result json.RawMessage) {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(result, &r) == nil && r.ProtocolVersion != "" {
		b.mu.Lock()
		b.version = r.ProtocolVersion
		b.mu.Unlock()
	}
}

// failed answers a request the server could not be asked; a notification
// or response that failed is logged.
func (b *bridge) failed(ctx context.Context, e *jsonrpc.Message, err error) {
	if ctx.Err() != nil {
		return // the client cancelled it, or the relay is ending
	}
	var unreachable *client.UnreachableError
	msg := err.Error()
	if !errors.As(err, &unreachable) {
		msg = "sending the request to the MCP endpoint: " + msg
	}
	if e.IsRequest() {
		b.out.write(errorResponse(e.ID, jsonrpc.CodeServerError, msg, nil))
		return
	}
	b.log.Warn("mcp: relaying a message failed", "method", e.Method, "err", msg)
}

// refused answers a request the server refused over HTTP: with the
// server's own JSON-RPC error if it sent one, else with its problem's
// title and detail (mcpx's problem documents), else its status.
func (b *bridge) refused(e *jsonrpc.Message, resp *http.Response, body []byte) {
	if rpcErrorBody(body) {
		if e.IsRequest() {
			b.out.write(compact(body))
		} else {
			b.log.Warn("mcp: the server refused a message", "method", e.Method, "status", resp.StatusCode, "answer", firstLine(string(body)))
		}
		return
	}
	msg, data := problemMessage(resp.StatusCode, body)
	if e.IsRequest() {
		b.out.write(errorResponse(e.ID, jsonrpc.CodeServerError, msg, data))
		return
	}
	b.log.Warn("mcp: the server refused a message", "method", e.Method, "status", resp.StatusCode, "err", msg)
}

// problemData is the data of the error a refused request is answered with.
type problemData struct {
	Status int    `json:"status"`
	Type   string `json:"type,omitempty"`
}

// problemMessage is the message of the error a request refused with
// status and body is answered with.
func problemMessage(status int, body []byte) (string, problemData) {
	var p wire.Problem
	if json.Unmarshal(body, &p) == nil && (p.Title != "" || p.Detail != "") {
		msg := p.Title
		if p.Detail != "" {
			msg = p.Detail
			if p.Title != "" {
				msg = p.Title + ": " + p.Detail
			}
		}
		return "mcpx: " + msg, problemData{Status: status, Type: p.Type}
	}
	msg := fmt.Sprintf("the MCP endpoint answered %d %s", status, http.StatusText(status))
	if s := firstLine(string(body)); s != "" {
		msg += ": " + s
	}
	return msg, problemData{Status: status}
}

// readBody reads at most max bytes of resp's body.
func readBody(resp *http.Response, max int) []byte {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, int64(max)))
	return b
}
