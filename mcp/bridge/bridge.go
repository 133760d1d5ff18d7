// Package bridge relays an MCP client speaking the stdio transport
// (newline-delimited JSON-RPC on stdin and stdout) to an MCP Streamable
// HTTP endpoint: `mcpx mcp`, for clients that can only spawn a command.
//
//	c := client.New(socket, client.Options{})
//	err := bridge.Serve(ctx, os.Stdin, os.Stdout, bridge.Options{
//		Client: c,
//		Path:   "/mcp",
//		Header: http.Header{"Mcpx-Cwd": {cwd}},
//	})
//
// # Overview
//
// Each line the client writes is one JSON-RPC message (or batch), POSTed
// to the endpoint as it comes, concurrently: a long tools/call does not
// hold up a later ping or notifications/cancelled. What the server answers
// (a JSON body, or each message of an SSE stream) is written to stdout, one
// whole message a line. Once the session's initialize is answered the GET
// stream carries the server's own requests and notifications (the
// client's notifications/initialized waits until it is open, so that what
// the server asks as soon as it is initialized, such as roots/list, has a
// stream to come on); the client's answers to them are POSTed back.
//
// The relay knows the protocol only where HTTP needs it (spec
// basic/transports#streamable-http): the Mcp-Session-Id of the initialize
// response, the negotiated MCP-Protocol-Version, the stateless era's
// standard headers (2026-07-28: the version from each request's _meta,
// Mcp-Method, Mcp-Name, and Mcp-Param-* for the tools the client listed),
// resumption with Last-Event-ID, a session the server lost (404: the
// initialize and initialized the client sent are replayed, the request
// resent once, the client warned with a notifications/message), and the
// client's roots mapped to a remote broker's side of the files. It is a
// generic Streamable HTTP client: nothing in it is particular to mcpx's
// endpoint. A server's refusal over HTTP becomes the request's JSON-RPC
// error: the server's own if its body is one, else naming the problem's
// title and detail (mcpx's problem documents) or the status.
//
// # Lifetime
//
// Serve returns at the end of stdin or when ctx is done: it waits for the
// requests in flight (at most Options.Drain), then deletes the session and
// stops the GET stream. Every goroutine it starts has ended when it
// returns.
package bridge

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/mcp/jsonrpc"
	"mcpx.dev/mcpx/wire"
)

// Options configure Serve.
type Options struct {
	// Client reaches the endpoint's server (required). The bridge sends
	// its requests with Client.Forward.
	Client *client.Client
	// Path is the endpoint's path on Client's server, e.g. "/mcp" or
	// "/mcp/github". "" = "/mcp".
	Path string
	// Header is sent on every request (the caller-context headers:
	// Mcpx-Cwd, Mcpx-Session, …). nil = none. Serve does not modify it.
	Header http.Header
	// MapPath turns a local directory into the server's side of the same
	// files; the file:// URIs of the client's roots are rewritten with it
	// (a broker on another machine). A root it does not map is left out.
	// nil = roots are sent as the client gave them.
	MapPath func(local string) (remote string, ok bool)
	// Restart is called when the endpoint's server cannot be reached at
	// all (a *client.UnreachableError: a daemon that stopped), to start
	// it again, as the CLI starts a daemon on demand; the message is then
	// sent once more. Calls do not overlap. nil = the message fails.
	Restart func(ctx context.Context) error
	// Logger receives diagnostics (stdout carries nothing but MCP). nil =
	// discard.
	Logger *slog.Logger
	// Drain is how long Serve waits for the requests in flight at the end
	// of stdin before cancelling them. 0 = 5s.
	Drain time.Duration
	// Retries bounds the reconnections of an SSE stream without progress
	// (the GET stream, a POST's answer stream resumed). 0 = 5.
	Retries int
	// Backoff is the first delay before a reconnection, doubled each time
	// up to 30s; a server's SSE retry field overrides it. 0 = 1s.
	Backoff time.Duration
	// MaxMessage bounds one message from the client (a line) or from the
	// server (a JSON body, an SSE event). 0 = 32 MiB.
	MaxMessage int
}

// ClientName is the Mcpx-Client header the bridge sends.
const ClientName = "mcpx-mcp"

// Serve relays the client on in and out to the endpoint until in ends or
// ctx is done; see the package documentation. It returns nil at the end
// of in, ctx's error when ctx ended it, or the error that stopped reading
// or writing the client.
func Serve(ctx context.Context, in io.Reader, out io.Writer, opts Options) error {
	b := newBridge(opts, out)
	err := b.readClient(ctx, in)
	b.shutdown(ctx)
	if err == nil {
		err = b.out.failure()
	}
	return err
}

// bridge is one client's relay.
type bridge struct {
	// Constant after newBridge.
	opts   Options
	log    *slog.Logger
	out    *lineWriter
	ctx    context.Context // the relay's lifetime: cancelled by shutdown
	cancel context.CancelFunc

	requests  sync.WaitGroup   // POSTs of the client's messages in flight
	inflight  jsonrpc.InFlight // the client's requests, for notifications/cancelled
	streams   sync.WaitGroup   // the GET stream
	recover   sync.Mutex       // one session recovery at a time
	restarts  sync.Mutex       // one Options.Restart at a time; guards restarted
	restarted time.Time        // when the last restart ended

	mu          sync.Mutex
	session     string                     // guarded by mu; the Mcp-Session-Id, "" = none
	version     string                     // guarded by mu; negotiated at initialize
	metaVersion string                     // guarded by mu; of the last request naming one in _meta
	initReq     []byte                     // guarded by mu; the client's initialize, for a replay
	initNote    []byte                     // guarded by mu; its notifications/initialized
	asked       map[string]string          // guarded by mu; the server's requests by id: their method
	tools       map[string]json.RawMessage // guarded by mu; annotated tools from tools/list, for Mcp-Param-*
	listen      context.CancelFunc         // guarded by mu; stops the GET stream, nil = none
	listenReady chan struct{}              // guarded by mu; closed at the GET stream's first answer
	closed      bool                       // guarded by mu; shutdown began: no new GET stream
	warned      map[string]bool            // guarded by mu; warnings given once
	// own is the caller session the bridge holds for a stateless client
	// (which has no MCP session): sent as Mcpx-Session on its requests, so
	// that session-scoped servers live as long as this process, and ended
	// (DELETE with it) at the end. "" when Options.Header names one.
	own     string
	ownUsed bool // guarded by mu; a request carried own
}

func newBridge(opts Options, out io.Writer) *bridge {
	if opts.Path == "" {
		opts.Path = "/mcp"
	}
	if opts.Drain <= 0 {
		opts.Drain = 5 * time.Second
	}
	if opts.Retries <= 0 {
		opts.Retries = 5
	}
	if opts.Backoff <= 0 {
		opts.Backoff = time.Second
	}
	if opts.MaxMessage <= 0 {
		opts.MaxMessage = 32 << 20
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &bridge{
		opts: opts, log: log, out: &lineWriter{w: out, broken: make(chan struct{})}, ctx: ctx, cancel: cancel,
		asked: map[string]string{}, tools: map[string]json.RawMessage{},
		warned: map[string]bool{},
	}
	if opts.Header.Get(wire.HeaderSession) == "" {
		var r [8]byte
		rand.Read(r[:])
		b.own = "bridge-" + hex.EncodeToString(r[:])
	}
	return b
}

// readClient relays each line of in until it ends (nil) or ctx is done.
func (b *bridge) readClient(ctx context.Context, in io.Reader) error {
	lines := make(chan []byte)
	errc := make(chan error, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() { errc <- readLines(in, b.opts.MaxMessage, lines, stop, b.log) }()
	for {
		select {
		case <-ctx.Done():
			// The reader goroutine may be left blocked reading in; it
			// ends at in's next line or its end (or the process's exit).
			return ctx.Err()
		case <-b.out.broken:
			return b.out.failure()
		case line, ok := <-lines:
			if !ok {
				return <-errc
			}
			b.dispatch(line)
		}
	}
}

// readLines sends each non-empty line of in to lines, closing it at the
// end, until stop is closed; a line over max bytes is skipped (and
// logged).
func readLines(in io.Reader, max int, lines chan<- []byte, stop <-chan struct{}, log *slog.Logger) error {
	defer close(lines)
	br := bufio.NewReaderSize(in, 64<<10)
	var line []byte
	over := false
	for {
		frag, err := br.ReadSlice('\n')
		if !over {
			line = append(line, frag...)
			if len(line) > max {
				log.Warn("mcp: skipping a message from the client over the size limit", "limit", max)
				line, over = line[:0], true
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if t := bytes.TrimSpace(line); len(t) > 0 && !over {
			select {
			case lines <- bytes.Clone(t):
			case <-stop:
				return nil
			}
		}
		line, over = line[:0], false
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// shutdown ends the relay: the requests in flight get Options.Drain to
// finish (cut short if ctx ends during it: a SIGTERM after the end of
// stdin), then are cancelled; the session is deleted; the GET stream
// stopped. It returns when every goroutine of the bridge has.
func (b *bridge) shutdown(ctx context.Context) {
	done := make(chan struct{})
	go func() { b.requests.Wait(); close(done) }()
	t := time.NewTimer(b.opts.Drain)
	cut := ctx.Done()
	if ctx.Err() != nil {
		cut = nil // ended by ctx: the requests still get their drain
	}
	select {
	case <-done:
	case <-cut:
		b.log.Info("mcp: cancelling the requests still in flight")
	case <-t.C:
		b.log.Warn("mcp: cancelling the requests still in flight at the end of input")
	}
	t.Stop()
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.inflight.CancelAll()
	<-done
	b.endSession()
	b.cancel()
	b.streams.Wait()
}

// lineWriter writes whole messages to the client, one a line. Safe for
// concurrent use.
type lineWriter struct {
	w      io.Writer
	mu     sync.Mutex
	err    error         // guarded by mu; the first write error
	broken chan struct{} // closed when err is set
}

// write writes msg, which must be one line of JSON, and a newline.
func (lw *lineWriter) write(msg []byte) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.err != nil {
		return
	}
	buf := make([]byte, 0, len(msg)+1)
	buf = append(append(buf, msg...), '\n')
	if _, err := lw.w.Write(buf); err != nil {
		lw.err = err
		close(lw.broken)
	}
}

func (lw *lineWriter) failure() error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.err
}
