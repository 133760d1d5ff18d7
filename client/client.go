// Package client is the Go client of the mcpx daemon's HTTP API (the
// contract is package wire): it dials the daemon's unix socket or an
// http(s) URL, sends the caller-context headers, decodes error answers into
// a *wire.Problem, and reads streamed tool calls.
//
//	c := client.New("/run/user/1000/mcpx/mcpx.sock", client.Options{})
//	res, err := c.CallTool(ctx, client.Caller{Cwd: "/src/app"}, "demo", "echo",
//		json.RawMessage(`{"message":"hi"}`), nil)
//	var p *wire.Problem
//	if errors.As(err, &p) {
//		// the daemon answered with an error: p.Status, p.Kind(), p.Detail
//	}
//
// A Client is safe for concurrent use and keeps connections alive between
// requests. Beside the routes it holds a lease for a program's lifetime
// (HoldLease: renewed until released) and forwards a request as it came
// (Forward: what `mcpx run`'s relay, in package scripts/runner, sends a
// script's requests on with). It serves no HTTP itself.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"mcpx.dev/mcpx/internal/paths"
	"mcpx.dev/mcpx/observe/tracing"

	"github.com/klauspost/compress/gzhttp"

	"mcpx.dev/mcpx/wire"
)

// Options configure New.
type Options struct {
	// Dial opens the connections to the daemon: ("unix", socket path) for a
	// socket address, ("tcp", host:port) for an http(s) URL. nil = a
	// net.Dialer with a 5s timeout.
	//
	// The tailnet issue adds a tsnet dialer for daemons on the tailnet.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)

	// Token is the bearer token sent to an http(s) daemon. "" = the token of
	// the daemon record (wire.RecordFile) in StateDir, if that record's
	// address is this client's: a local daemon's TCP port works with no
	// setup for its own user. Unix-socket requests carry no token.
	Token string
	// StateDir is where the daemon record is looked for; "" = StateDir
	// of the environment ($XDG_STATE_HOME/mcpx).
	StateDir string
}

// ClientName is the Mcpx-Client header Do sends when the caller sets none:
// the network listeners refuse requests without one (the browser guard).
const ClientName = "mcpx-go"

// UserAgent is the User-Agent Do sends when the caller sets none:
// mcpx/<module version>, which the broker records with a session's
// creator.
var UserAgent = "mcpx/" + moduleVersion()

func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Client talks to one daemon.
type Client struct {
	addr string // the socket path or URL, for messages
	base string // URL prefix of the API
	unix bool   // over the unix socket
	hc   *http.Client
	tr   *http.Transport // hc's, under its compression

	token    string // Options.Token; constant
	stateDir string // Options.StateDir; constant

	mu        sync.Mutex
	fileToken string // guarded by mu; the daemon record's token, once read
}

// New returns a client of the daemon at addr: an "http://" or "https://"
// URL, or else a unix socket path (optionally "unix://path"). Nothing is
// dialled until the first request.
func New(addr string, opts Options) *Client {
	c := &Client{addr: addr, token: opts.Token, stateDir: opts.StateDir}
	tr := &http.Transport{
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true, // gzhttp.Transport negotiates zstd and gzip
	}
	dial := opts.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	}
	switch {
	case strings.HasPrefix(addr, "http://"), strings.HasPrefix(addr, "https://"):
		c.base = strings.TrimSuffix(addr, "/")
		tr.DialContext = dial
	default:
		sock := strings.TrimPrefix(addr, "unix://")
		c.addr, c.base, c.unix = sock, "http://mcpx", true
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dial(ctx, "unix", sock)
		}
	}
	c.hc, c.tr = &http.Client{Transport: gzhttp.Transport(tr)}, tr
	return c
}

// Addr is the daemon's address: the socket path, or the URL.
func (c *Client) Addr() string { return c.addr }

// Unix reports whether the client talks to a unix socket.
func (c *Client) Unix() bool { return c.unix }

// Caller is what the calling program declares about itself, sent as the
// caller-context headers (wire.HeaderCwd, …) on the routes that read them.
// Zero fields are not sent.
type Caller struct {
	Cwd           string // absolute, on the daemon's machine
	Session       string
	ParentSession string
	Lease         string // a lease id (AcquireLease); $MCPX_LEASE in the CLI
	// Scope asks for this scope instead of the server's (Mcpx-Scope); the
	// server's scopePolicy must allow it, else the call is refused (403).
	Scope string
	// ScopeFrom is where Scope came from (Mcpx-Scope-From: "flag",
	// "env", "script"); "" = not declared, which the broker takes as
	// "api".
	ScopeFrom string
	// Pid is the pid whose lifetime pid-scoped instances follow. It is sent
	// over the unix socket only: the daemon trusts it from no one else.
	Pid int
}

// CallerHeader is cl as the caller-context headers this client sends
// (Mcpx-Pid only over the unix socket), for a request made with Forward.
// The caller owns the returned header.
func (c *Client) CallerHeader(cl Caller) http.Header { return c.header(&cl) }

func (c *Client) header(cl *Caller) http.Header {
	h := http.Header{}
	if cl == nil {
		return h
	}
	set := func(k, v string) {
		if v != "" {
			h.Set(k, v)
		}
	}
	set(wire.HeaderCwd, cl.Cwd)
	set(wire.HeaderSession, cl.Session)
	set(wire.HeaderParentSession, cl.ParentSession)
	set(wire.HeaderLease, cl.Lease)
	set(wire.HeaderScope, cl.Scope)
	if cl.Scope != "" {
		set(wire.HeaderScopeFrom, cl.ScopeFrom)
	}
	if c.unix && cl.Pid > 0 {
		h.Set(wire.HeaderPid, strconv.Itoa(cl.Pid))
	}
	return h
}

// UnreachableError is a failure to connect to the daemon at all: nothing
// listens at Addr, or the dial failed.
type UnreachableError struct {
	Addr string // the socket path or URL
	Unix bool   // Addr is a unix socket
	Err  error  // the dial error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the broker at %s: %v", e.Addr, unwrapDial(e.Err))
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// unwrapDial shortens "dial unix /x: connect: no such file or directory" to
// its cause.
func unwrapDial(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

// Do sends a request to path (the API's, e.g. from wire.Route.Path) with
// the headers h; a non-nil body is sent as JSON. A connection failure is an
// *UnreachableError, an error status a *wire.Problem. On success the caller
// owns and must close the response body.
func (c *Client) Do(ctx context.Context, method, path string, body []byte, h http.Header) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", wire.MediaJSON)
	}
	tracing.Inject(ctx, req.Header) // the caller's trace, if its ctx has one (mcpx call --trace)
	if req.Header.Get(wire.HeaderClient) == "" {
		req.Header.Set(wire.HeaderClient, ClientName) // the network listeners' browser guard
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", UserAgent)
	}
	tok := c.bearer()
	if tok != "" && req.Header.Get(wire.HeaderAuthorization) == "" {
		req.Header.Set(wire.HeaderAuthorization, "Bearer "+tok)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.sendError(err)
	}
	if resp, err = c.reauthorize(ctx, req, resp, tok); err != nil {
		return nil, err
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		return nil, readProblem(resp)
	}
	return resp, nil
}

// reauthorize answers a 401 to a request sent with the daemon record's
// token tok (or none, when there was no record yet: a daemon answers on
// its listeners a moment before its record is written). A restarted
// daemon has a new token: the record is read again, and the request sent
// once more if it now says something else. Only a request whose body can
// be sent again is retried (no body, or one of http.NewRequest's own
// readers, which set GetBody). Any other response is returned as it is.
func (c *Client) reauthorize(ctx context.Context, req *http.Request, resp *http.Response, tok string) (*http.Response, error) {
	if resp.StatusCode != http.StatusUnauthorized || c.token != "" {
		return resp, nil
	}
	c.forgetToken(tok)
	fresh := c.bearer()
	if fresh == tok || fresh == "" || (req.Body != nil && req.Body != http.NoBody && req.GetBody == nil) {
		return resp, nil
	}
	resp.Body.Close()
	retry := req.Clone(ctx)
	if req.GetBody != nil {
		retry.Body, _ = req.GetBody()
	}
	retry.Header.Set(wire.HeaderAuthorization, "Bearer "+fresh)
	return c.hc.Do(retry)
}

// Forward sends a request of another client on to the daemon, as a relay
// does: method and uri (the path and query, e.g. from
// http.Request.RequestURI) with the headers h and the body, streamed. It
// adds this client's Mcpx-Client (if h has none) and bearer token (and,
// as Do does, retries a 401 once with a restarted daemon's new token when
// the body is a bytes or strings reader), and leaves the status to the
// caller: an error answer is a response like any other, for the relay to
// pass on. Only a failure to reach the daemon is an error
// (*UnreachableError for a dial). The caller owns and must close the
// response body, which arrives decompressed.
func (c *Client) Forward(ctx context.Context, method, uri string, body io.Reader, h http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+uri, body)
	if err != nil {
		return nil, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if req.Header.Get(wire.HeaderClient) == "" {
		req.Header.Set(wire.HeaderClient, ClientName)
	}
	tok := c.bearer()
	if tok != "" {
		req.Header.Set(wire.HeaderAuthorization, "Bearer "+tok)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.sendError(err)
	}
	return c.reauthorize(ctx, req, resp, tok)
}

// bearer returns the token to send, if any: Options.Token, else the daemon
// record's (read once, and again after a 401).
func (c *Client) bearer() string {
	if c.unix {
		return ""
	}
	if c.token != "" {
		return c.token
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fileToken == "" {
		dir := c.stateDir
		if dir == "" {
			dir, _ = paths.StateDir(os.Getenv)
		}
		if dir != "" {
			c.fileToken = recordToken(dir, c.base)
		}
	}
	return c.fileToken
}

func (c *Client) forgetToken(tok string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fileToken == tok {
		c.fileToken = ""
	}
}

// readProblem decodes an error response. Anything that is not a problem
// document (a proxy's error page) becomes one with the status text.
func readProblem(resp *http.Response) *wire.Problem {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var p wire.Problem
	if err := json.Unmarshal(b, &p); err != nil || p.Detail == "" {
		p = wire.Problem{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode),
			Detail: strings.TrimSpace(fmt.Sprintf("%s: %s", resp.Status, b))}
	}
	if p.Status == 0 {
		p.Status = resp.StatusCode
	}
	return &p
}

// send makes the request of the operation op with path parameters params
// and returns the answer's body; the caller must close it.
func (c *Client) send(ctx context.Context, op string, cl *Caller, body []byte, h http.Header, query string, params ...string) (*http.Response, error) {
	rt, ok := wire.Lookup(op)
	if !ok {
		return nil, fmt.Errorf("client: unknown operation %q", op)
	}
	hh := c.header(cl)
	for k, v := range h {
		hh[k] = v
	}
	return c.Do(ctx, rt.Method, rt.Path(params...)+query, body, hh)
}

// get makes the GET request of op and decodes its JSON document. raw is the
// body as the daemon sent it (decompressed), for callers that print or
// forward it unchanged (`mcpx status --json`).
func get[T any](ctx context.Context, c *Client, op string, cl *Caller, query string, params ...string) (doc *T, raw []byte, err error) {
	return sendDoc[T](ctx, c, op, cl, nil, query, params...)
}

// sendDoc is get with a request body (nil = none).
func sendDoc[T any](ctx context.Context, c *Client, op string, cl *Caller, body []byte, query string, params ...string) (doc *T, raw []byte, err error) {
	resp, err := c.send(ctx, op, cl, body, nil, query, params...)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err = io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the broker's answer: %w", err)
	}
	doc = new(T)
	if err := json.Unmarshal(raw, doc); err != nil {
		return nil, raw, fmt.Errorf("decoding the broker's answer: %w", err)
	}
	return doc, raw, nil
}

// readRaw returns the body of a raw route's answer: the child's MCP result.
// A read error is returned as it is (the CLI has always printed it so).
func readRaw(resp *http.Response, err error) (json.RawMessage, error) {
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}
