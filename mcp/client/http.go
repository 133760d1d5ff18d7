package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"mcpx.dev/mcpx/mcp/jsonrpc"
	"mcpx.dev/mcpx/observe/tracing"
)

// ErrSessionExpired is returned (wrapped) when a streamable HTTP server
// answers 404 to a request carrying a session id: the session is over and
// the caller must connect again.
//
// Spec (basic/transports#session-management): "When a client receives HTTP
// 404 in response to a request containing an Mcp-Session-Id, it MUST start a
// new session by sending a new InitializeRequest without a session ID
// attached."
var ErrSessionExpired = errors.New("mcp http session expired")

// ErrNotDelivered marks a request the server refused before acting on it:
// its own POST was answered 404 for an expired session. Unlike the other
// calls that fail when a session expires, it is safe to send again.
var ErrNotDelivered = errors.New("request not delivered")

// NewHTTP returns the streamable HTTP client transport for the MCP endpoint
// url (spec: basic/transports#streamable-http). headers are sent on every
// request (e.g. Authorization). client nil means a default client; its
// Timeout should be zero, as answers may stream for as long as a tool runs.
// Redirects are followed only within the endpoint's scheme and host.
//
// Each message is POSTed; the answer to a request comes back in the POST's
// response, as a JSON body or an SSE stream that may first carry the
// server's own requests and notifications. After initialize, a GET stream
// receives messages the server sends outside any request (list_changed,
// logging). Close ends the HTTP session with DELETE.
func NewHTTP(url string, headers map[string]string, client *http.Client) Transport {
	c := http.Client{}
	if client != nil {
		c = *client
	}
	next := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Host != via[0].URL.Host || req.URL.Scheme != via[0].URL.Scheme {
			return fmt.Errorf("refusing redirect from %s to another host or scheme (%s://%s)", via[0].URL.Host, req.URL.Scheme, req.URL.Host)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &httpTransport{
		url:     url,
		headers: maps.Clone(headers),
		client:  &c,
		max:     DefaultMaxMessageBytes,
		in:      make(chan inbound, 64),
		closed:  make(chan struct{}),
		ctx:     ctx,
		cancel:  cancel,

		getAnswered: make(chan struct{}),
	}
}

type httpTransport struct {
	url     string
	headers map[string]string
	client  *http.Client
	max     int // the largest message kept; set before the first Send

	mu         sync.Mutex
	sessionID  string // guarded by mu; from the initialize response
	version    string // guarded by mu; set after negotiation
	getStarted bool   // guarded by mu
	err        error  // guarded by mu; why closed was closed

	getAnswered     chan struct{} // closed once the first GET has an answer (or cannot have one)
	getAnsweredOnce sync.Once

	// toolOf returns a tool's Tool object from the session's cached
	// tools/list (nil if not cached), for the stateless era's Mcp-Param-
	// headers; set once by Connect, before the first request.
	toolOf func(name string) json.RawMessage

	in        chan inbound  // messages for Recv
	closed    chan struct{} // closed by Close or a fatal error
	closeOnce sync.Once
	ctx       context.Context // ends with the transport; bounds every HTTP request
	cancel    context.CancelFunc
	wg        sync.WaitGroup // the GET stream goroutine and answer stream readers; Add under mu while err is nil
}

// inbound is one message for Recv, or an oversized one that was skipped.
type inbound struct {
	msg     []byte
	big     *TooLargeError
	related []byte // the raw id of the request on whose answer stream msg came; nil = the GET stream
}

func (t *httpTransport) setMaxMessage(n int) { t.max = n }

// Extras: streamable HTTP offers every one. Send returns once the
// request's answer has arrived; the POST a message came on relates it to
// a request; the version header, the Mcp-Param- headers, the session id
// and the GET stream are the transport's own.
func (t *httpTransport) Extras() Extras {
	return Extras{
		SetMaxMessage:      t.setMaxMessage,
		SendWaitsForAnswer: true,
		RecvRelated:        t.recvRelated,
		ViolationHint:      t.violationHint(),
		SetToolLookup:      t.setToolLookup,
		SetProtocolVersion: t.setProtocolVersion,
		ForgetSession:      t.forgetSession,
		OpenStream:         t.openStream,
		SessionID:          t.session,
		ResumeSession:      t.resumeSession,
	}
}

// answerGrace bounds how long an answer stream is still read after it
// carried its answer: the server should end it then, and one that leaves it
// open must not hold a connection for long.
const answerGrace = 2 * time.Second

// goStream runs fn on a goroutine Close waits for; false once closed.
func (t *httpTransport) goStream(fn func()) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return false
	}
	t.wg.Go(fn)
	return true
}

// setProtocolVersion is Extras.SetProtocolVersion.
func (t *httpTransport) setProtocolVersion(v string) {
	t.mu.Lock()
	t.version = v
	t.mu.Unlock()
}

func (t *httpTransport) violationHint() string {
	return "MCP HTTP servers must answer with JSON-RPC messages (a JSON body or text/event-stream data)"
}

// newRequest builds a request carrying the session's headers.
//
// Spec (basic/transports#sending-messages-to-the-server): "The client MUST
// include an Accept header, listing both application/json and
// text/event-stream as supported content types." Spec
// (#protocol-version-header): "the client MUST include the
// MCP-Protocol-Version: <protocol-version> HTTP header on all subsequent
// requests to the MCP server".
func (t *httpTransport) newRequest(ctx context.Context, method string, body []byte) (*http.Request, string, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.url, r)
	if err != nil {
		return nil, "", err
	}
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	switch method {
	case http.MethodPost:
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	case http.MethodGet:
		req.Header.Set("Accept", "text/event-stream")
	}
	t.mu.Lock()
	sid, version := t.sessionID, t.version
	t.mu.Unlock()
	if sid != "" {
		req.Header.Set(jsonrpc.HeaderSessionID, sid)
	}
	if version != "" {
		req.Header.Set(jsonrpc.HeaderProtocolVersion, version)
	}
	return req, sid, nil
}

// Send POSTs msg and hands whatever the server answers to Recv. For a
// request it returns once the answer has arrived, on the POST's own stream
// or on any other (the session ends ctx with cause ErrAnswered then); the
// rest of the POST's stream is read by a goroutine the transport owns,
// bounded by answerGrace.
//
// Spec: "If the input is a JSON-RPC response or notification: If the server
// accepts the input, the server MUST return HTTP status code 202 Accepted
// with no body." "If the input is a JSON-RPC request, the server MUST either
// return Content-Type: text/event-stream, to initiate an SSE stream, or
// Content-Type: application/json, to return one JSON object."
func (t *httpTransport) Send(ctx context.Context, msg []byte) error {
	if err := t.closedErr(); err != nil {
		return err
	}
	// The HTTP request lives on the transport's context, cut by ctx unless
	// ctx ended because the answer arrived elsewhere.
	rctx, rcancel := context.WithCancel(t.ctx)
	handedOff := false
	defer func() {
		if !handedOff {
			rcancel()
		}
	}()
	stop := context.AfterFunc(ctx, func() {
		if context.Cause(ctx) != ErrAnswered {
			rcancel()
		}
	})
	defer stop()

	req, sid, err := t.newRequest(rctx, http.MethodPost, bytes.Clone(msg))
	if err != nil {
		return err
	}
	if tracing.Enabled() {
		tracing.Inject(ctx, req.Header) // the caller's span: a child that traces joins its trace
	}
	if req.Header.Get(jsonrpc.HeaderProtocolVersion) == jsonrpc.StatelessVersion {
		standardHeaders(req.Header, msg, t.toolOf)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		if cerr := t.closedErr(); cerr != nil {
			return cerr
		}
		if context.Cause(ctx) == ErrAnswered {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("POST %s: %w", t.url, err)
	}
	defer resp.Body.Close()
	e, _ := jsonrpc.Parse(msg)
	if answer := errorAnswer(resp, sid, e); answer != nil {
		return t.push(ctx, answer)
	}
	if err := t.checkStatus(resp, sid, "POST"); err != nil {
		return err
	}
	t.captureSession(resp)
	if !e.IsRequest() || resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent {
		// A notification or response is answered 202 with no body. Some
		// servers answer 200 with a JSON body anyway: like the official
		// SDK clients, ignore it (read a little, so the connection can be
		// reused).
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		t.startGet()
		return nil
	}
	switch mediaType(resp.Header.Get("Content-Type")) {
	case "application/json":
		body, err := readLimited(resp.Body, resp.ContentLength, t.max)
		if errors.Is(err, ErrMessageTooLarge) {
			return t.pushBig(ctx, &TooLargeError{Limit: t.max, ID: bytes.Clone(e.ID)})
		}
		if err != nil {
			return fmt.Errorf("reading POST answer: %w", err)
		}
		if len(bytes.TrimSpace(body)) == 0 {
			return nil
		}
		return t.push(ctx, body)
	case "text/event-stream":
		return t.answerStream(ctx, rctx, resp, bytes.Clone(e.ID), rcancel, &handedOff)
	default:
		return fmt.Errorf("POST %s answered with Content-Type %q; want application/json or text/event-stream", t.url, resp.Header.Get("Content-Type"))
	}
}

// answerStream reads the POST's SSE stream on a goroutine the transport
// owns and returns when the answer to reqID has arrived on it, when it
// failed, or when ctx ends (with ErrAnswered: the answer came on another
// stream).
func (t *httpTransport) answerStream(ctx, rctx context.Context, resp *http.Response, reqID []byte, rcancel context.CancelFunc, handedOff *bool) error {
	ans := make(chan struct{})
	done := make(chan error, 1)
	body := resp.Body
	resp.Body = http.NoBody // the goroutine closes body
	if !t.goStream(func() {
		defer rcancel()
		defer body.Close()
		done <- t.readStream(rctx, body, reqID, ans, rcancel)
	}) {
		body.Close()
		return t.closedErr()
	}
	*handedOff = true
	select {
	case <-ans:
		return nil
	case err := <-done:
		return err
	case <-ctx.Done():
		// Answered elsewhere or given up: this stream has nothing more we
		// wait for.
		rcancel()
		if context.Cause(ctx) == ErrAnswered {
			return nil
		}
		<-done
		return ctx.Err()
	}
}

// readLimited reads a body of at most limit bytes (size: its
// Content-Length, -1 if unknown), never buffering more; a larger one is
// ErrMessageTooLarge and is not read on.
func readLimited(r io.Reader, size int64, limit int) ([]byte, error) {
	if size > int64(limit) {
		return nil, ErrMessageTooLarge
	}
	n := 512
	if size >= 0 {
		n = int(size) + 1
	}
	b := make([]byte, 0, n)
	for {
		if len(b) == cap(b) {
			if len(b) > limit {
				return nil, ErrMessageTooLarge
			}
			b = slices.Grow(b, min(max(cap(b), 512), limit+1-len(b)))
		}
		m, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+m]
		if len(b) > limit {
			return nil, ErrMessageTooLarge
		}
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// mediaType returns the lower-cased media type of a Content-Type value.
func mediaType(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.ToLower(strings.TrimSpace(ct))
}

// errorAnswer returns the JSON-RPC error response to req that a failed
// HTTP answer carries, nil if it carries none: the caller gets the
// server's error (-32602 with its data, -32021, -32022 with the versions
// it supports) instead of the bare status. A response with another id, or
// any other body, is left to checkStatus, which reads what is left of it;
// so are the statuses that mean something of their own (401 and 403 for
// authorization, 404 for an ended session).
//
// Spec (2026-07-28, basic/transports): a server answers a request it
// rejects with "an HTTP error status code (e.g. 400 Bad Request)" and a
// JSON-RPC error response in the body.
func errorAnswer(resp *http.Response, sid string, req jsonrpc.Message) []byte {
	code := resp.StatusCode
	if code/100 == 2 || code == http.StatusUnauthorized || code == http.StatusForbidden ||
		code == http.StatusNotFound && sid != "" || !req.IsRequest() ||
		mediaType(resp.Header.Get("Content-Type")) != "application/json" {
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), resp.Body))
	if !json.Valid(body) {
		return nil
	}
	m, err := jsonrpc.Parse(body)
	var e jsonrpc.Error
	if err != nil || !m.IsResponse() || m.Error == nil || !bytes.Equal(m.ID, req.ID) ||
		json.Unmarshal(m.Error, &e) != nil || e.Code == 0 {
		return nil
	}
	return body
}

// checkStatus turns a failed HTTP answer into an error; a 404 for a
// session ends the transport with ErrSessionExpired.
func (t *httpTransport) checkStatus(resp *http.Response, sid, method string) error {
	if resp.StatusCode/100 == 2 {
		return nil
	}
	if resp.StatusCode == http.StatusNotFound && sid != "" {
		err := fmt.Errorf("%w: %s %s answered 404 for session %s", ErrSessionExpired, method, t.url, sid)
		t.fail(err)
		return err
	}
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return &HTTPStatusError{Method: method, URL: t.url, StatusCode: resp.StatusCode, Status: resp.Status, Body: string(bytes.TrimSpace(snippet))}
}

// HTTPStatusError is a url server's answer with a failing HTTP status.
// URL may name internal hosts: show it only to the daemon's own user.
type HTTPStatusError struct {
	Method     string // "POST", "GET"
	URL        string
	StatusCode int
	Status     string // e.g. "401 Unauthorized"
	Body       string // the first bytes of the body, trimmed
}

func (e *HTTPStatusError) Error() string {
	s := fmt.Sprintf("%s %s: %s", e.Method, e.URL, e.Status)
	if e.Body != "" {
		s += ": " + e.Body
	}
	return s
}

// setToolLookup is Extras.SetToolLookup.
func (t *httpTransport) setToolLookup(f func(name string) json.RawMessage) { t.toolOf = f }

// session is Extras.SessionID.
func (t *httpTransport) session() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sessionID
}

// resumeSession is Extras.ResumeSession: the next request carries id, as
// if the server had assigned it to this transport at initialize.
func (t *httpTransport) resumeSession(id string) {
	t.mu.Lock()
	t.sessionID = id
	t.mu.Unlock()
}

// forgetSession is Extras.ForgetSession.
func (t *httpTransport) forgetSession() {
	t.mu.Lock()
	t.sessionID = ""
	t.mu.Unlock()
}

// captureSession records the session id the server assigned at initialize.
//
// Spec: "A server using the Streamable HTTP transport MAY assign a session ID
// at initialization time, by including it in an Mcp-Session-Id header on the
// HTTP response containing the InitializeResult." "Clients MUST include it
// in the Mcp-Session-Id header on all of their subsequent HTTP requests."
func (t *httpTransport) captureSession(resp *http.Response) {
	sid := resp.Header.Get(jsonrpc.HeaderSessionID)
	if sid == "" {
		return
	}
	t.mu.Lock()
	if t.sessionID == "" {
		t.sessionID = sid
	}
	t.mu.Unlock()
}

// push validates msg and hands it to Recv.
func (t *httpTransport) push(ctx context.Context, msg []byte) error {
	return t.pushRelated(ctx, msg, nil)
}

// pushRelated is push for a message that came on the answer stream of the
// request whose raw id is related.
func (t *httpTransport) pushRelated(ctx context.Context, msg, related []byte) error {
	if !json.Valid(msg) {
		err := &ProtocolError{Line: truncate(msg, 200), Reason: "a message that is not JSON", Hint: t.violationHint()}
		t.fail(err)
		return err
	}
	select {
	case t.in <- inbound{msg: msg, related: related}:
		return nil
	case <-t.closed:
		return t.closedErr()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pushBig hands Recv an oversized message that was skipped.
func (t *httpTransport) pushBig(ctx context.Context, e *TooLargeError) error {
	select {
	case t.in <- inbound{big: e}:
		return nil
	case <-t.closed:
		return t.closedErr()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Recv returns the next message the server sent, or a *TooLargeError for
// one that was over the limit (Recv may be called again after it).
func (t *httpTransport) Recv() ([]byte, error) {
	msg, _, err := t.recvRelated()
	return msg, err
}

// recvRelated is Recv, with the raw id of the request on whose answer
// stream the message came (nil for the GET stream).
func (t *httpTransport) recvRelated() ([]byte, []byte, error) {
	select {
	case m := <-t.in:
		if m.big != nil {
			return nil, nil, m.big
		}
		return m.msg, m.related, nil
	case <-t.closed:
		return nil, nil, t.closedErr()
	}
}

func (t *httpTransport) closedErr() error {
	select {
	case <-t.closed:
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.err
	default:
		return nil
	}
}

// fail ends the transport with err (first one wins).
func (t *httpTransport) fail(err error) {
	t.closeOnce.Do(func() {
		t.mu.Lock()
		t.err = err
		t.mu.Unlock()
		close(t.closed)
		t.cancel()
	})
}

// Close ends in-flight requests and the GET stream, then ends the HTTP
// session with DELETE.
//
// Spec (#session-management): "Clients that no longer need a particular
// session […] SHOULD send an HTTP DELETE to the MCP endpoint with the
// Mcp-Session-Id header, to explicitly terminate the session." The server
// MAY answer 405; either way the session is over for us.
func (t *httpTransport) Close() error {
	t.fail(ErrClosed)
	t.wg.Wait()
	t.mu.Lock()
	sid, expired := t.sessionID, errors.Is(t.err, ErrSessionExpired)
	t.sessionID = "" // DELETE once
	t.mu.Unlock()
	if sid == "" || expired {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, t.url, nil)
	if err != nil {
		return err
	}
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set(jsonrpc.HeaderSessionID, sid)
	t.mu.Lock()
	if t.version != "" {
		req.Header.Set(jsonrpc.HeaderProtocolVersion, t.version)
	}
	t.mu.Unlock()
	resp, err := t.client.Do(req)
	if err != nil {
		return fmt.Errorf("ending mcp http session: %w", err)
	}
	resp.Body.Close()
	return nil
}
