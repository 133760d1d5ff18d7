// Package api serves the broker over HTTP: the /v1 routes, authentication
// (unix-socket peer credentials, loopback TCP with the daemon's token,
// signed tokens of package auth, a listener's own Identify), the browser
// guard of the network listeners, problem+json errors, compression and
// server-sent events for tool progress; and the browser pages of package
// dashboard (/, /docs, /login), whose sign-in trades a token for a session
// cookie and a CSRF secret (browser.go).
//
//	ln, err := api.ListenUnix("/run/user/1000/mcpx/mcpx.sock")
//	h := api.New(api.Options{Broker: b, Logger: logger, Version: "v0.1.0"})
//	err = api.Serve(ctx, ln, h, api.ServeOptions{Logger: logger})
//
// Nothing here knows about processes: every request becomes a call on
// *broker.Broker with a broker.Request (who is calling, from where, which
// server), and every error comes back as a *broker.Error mapped to one status
// and one stable problem type in writeProblem.
//
// The contract (routes, headers, documents, problems, events) is data in
// package wire: the router mounts wire's route table, one handler per
// operation name; the Go client is client.
package api

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/klauspost/compress/gzhttp"
	"go.opentelemetry.io/otel/attribute"

	"mcpx.dev/mcpx/api/mcp"
	"mcpx.dev/mcpx/api/metrics"
	"mcpx.dev/mcpx/api/public"
	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/owner"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/observe/daemonlog"
	"mcpx.dev/mcpx/observe/tracing"
	"mcpx.dev/mcpx/openapi"
	"mcpx.dev/mcpx/wire"
)

// DefaultMaxBodyBytes bounds request bodies when Options.MaxBodyBytes is 0.
const DefaultMaxBodyBytes = 4 << 20

// DefaultBodyTimeout is Options.BodyTimeout when it is 0: generous for a
// client on a slow link, short enough that stalled bodies do not pile up.
const DefaultBodyTimeout = 30 * time.Second

// Options configure New.
type Options struct {
	Broker       *broker.Broker // required
	Logger       *slog.Logger   // nil = discard
	Version      string         // reported by /healthz and /v1/whoami; "" = "dev"
	MaxBodyBytes int64          // request body limit; 0 = DefaultMaxBodyBytes
	// MaxDepth bounds the nesting of tool and prompt arguments (the
	// config's limits.maxDepth); 0 = config.DefaultMaxDepth.
	MaxDepth int
	// BodyTimeout bounds the wait for the next byte of a request body:
	// a body that stops arriving is answered 408. 0 = DefaultBodyTimeout.
	BodyTimeout time.Duration
	// KeepAlive is how often an event stream with nothing to say sends a
	// comment, so that idle timeouts on the way do not cut it; 0 = 15s.
	KeepAlive time.Duration
	// Reidentify is how often a long-lived response (events, a followed
	// log, a streamed call) re-identifies its caller, and ends when its
	// rights no longer cover it (also at once when a token is revoked
	// here); 0 = DefaultReidentify.
	Reidentify time.Duration
	// Token is the bearer token every TCP request must carry
	// ("Authorization: Bearer <token>"); "" = TCP callers are refused (401).
	// Unix-socket callers never need it.
	Token string
	// Daemon is the daemon's description and controls, for /v1/whoami and
	// the /v1/daemon routes; nil = those routes answer 503.
	Daemon *Daemon
	// Node describes the daemon's tailnet node for /v1/whoami; nil = not on
	// a tailnet. Constant after New.
	Node *wire.NodeInfo
	// Tokens verifies signed bearer tokens on the network listeners
	// (loopback TCP, the tailnet) and backs the /v1/tokens routes; nil =
	// signed tokens are refused (401) and those routes answer 503.
	Tokens *auth.Issuer
	// OwnerTokens are the owner's named tokens (package auth/owner), each
	// admitting its bearer on loopback TCP as the daemon's token does, but
	// surviving restarts; nil = none is accepted.
	OwnerTokens *owner.Tokens
	// InputWait bounds how long a child's request for input waits for a
	// streaming caller's answer (the config's limits.inputWait); then the
	// child gets a decline. 0 = config.DefaultInputWait.
	InputWait time.Duration
	// Metrics is the daemon's Prometheus metrics, served at /metrics;
	// nil = New makes them for Broker (package metrics).
	Metrics *metrics.Metrics
	// Log is the daemon's log file, read back by GET /v1/log; nil = that
	// route answers 503.
	Log *daemonlog.File
	// MCP is the MCP endpoint served at /mcp and /mcp/{server} (package
	// api/mcp; its owner closes it); nil = those paths answer 503.
	MCP *mcp.Server
	// CodeCache is where code mode's runs keep their generated clients
	// and their own directories; "" = a directory under os.TempDir().
	CodeCache string
	// Tailnet is the daemon's tailnet node, for GET /v1/tailnet and GET
	// /v1/fleet; nil = not on a tailnet (the first answers "off", the
	// second 503).
	Tailnet *Tailnet
	// Public is the public face's resource server (package api/public),
	// served by NewFaces' Public handler; nil = no public face.
	Public *public.Face
}

// server holds what every handler needs. It is immutable after New.
type server struct {
	b         *broker.Broker
	log       *slog.Logger
	version   string
	maxBody   int64
	maxDepth  int           // deeper arguments are refused (limits.maxDepth)
	bodyIdle  time.Duration // the longest pause within a request body
	owner     int           // the only uid admitted on the unix socket: the daemon's
	keepAlive time.Duration
	// reidentify is Options.Reidentify; revocations wakes the streams'
	// rights watches when a token is revoked (rightswatch.go).
	reidentify  time.Duration
	revocations *broadcast
	token       []byte         // Options.Token; empty = no TCP caller is admitted
	daemon      *Daemon        // Options.Daemon; may be nil
	node        *wire.NodeInfo // Options.Node; may be nil
	tokens      *auth.Issuer   // Options.Tokens; may be nil
	ownerTokens *owner.Tokens  // Options.OwnerTokens; may be nil
	inputWait   time.Duration  // Options.InputWait
	calls       *callRegistry  // the streamed calls that may be asked for input
	metrics     *metrics.Metrics
	logFile     *daemonlog.File // Options.Log; may be nil
	tailnet     *Tailnet        // Options.Tailnet; may be nil
	mcp         *mcp.Server     // Options.MCP; may be nil
	public      *public.Face    // Options.Public; may be nil
	// openAPI is the broker's OpenAPI document, built on first use.
	openAPIDoc func() ([]byte, error)
	// toolDocs are the tool documents, built once per tool-list change.
	toolDocs *openapi.Cache
	// browser holds the signed-in browsers' sessions (browser.go).
	browser *browserSessions
	// callFeed is GET /v1/calls' readers (callfeed.go).
	callFeed *callFeed
}

// New returns the API handler. It serves every route of wire.Routes, on any
// listener: callers are authenticated from the connection (see ConnContext),
// so the handler must be served by an http.Server whose ConnContext is
// ConnContext (Serve and NewServer do that) for unix-socket callers to be
// admitted.
func New(opts Options) http.Handler {
	return NewFaces(opts).Private
}

// mount returns the handler of table, and gives the MCP endpoint code
// mode's tools over it.
func (s *server) mount(table []route, opts Options) http.Handler {
	h := s.handler(table)
	if opts.MCP != nil {
		cache := opts.CodeCache
		if cache == "" {
			cache = filepath.Join(os.TempDir(), fmt.Sprintf("mcpx-code-%d", os.Getuid()))
		}
		opts.MCP.SetCode(&codeMode{s: s, h: h, cache: cache})
	}
	return h
}

func newServer(opts Options) *server {
	s := &server{
		b:           opts.Broker,
		log:         opts.Logger,
		version:     opts.Version,
		maxBody:     opts.MaxBodyBytes,
		maxDepth:    opts.MaxDepth,
		bodyIdle:    cmp.Or(opts.BodyTimeout, DefaultBodyTimeout),
		owner:       os.Getuid(),
		keepAlive:   cmp.Or(opts.KeepAlive, 15*time.Second),
		reidentify:  cmp.Or(opts.Reidentify, DefaultReidentify),
		revocations: newBroadcast(),
		token:       []byte(opts.Token),
		daemon:      opts.Daemon,
		node:        opts.Node,
		tokens:      opts.Tokens,
		ownerTokens: opts.OwnerTokens,
		inputWait:   cmp.Or(opts.InputWait, config.DefaultInputWait),
		calls:       newCallRegistry(),
		metrics:     opts.Metrics,
		logFile:     opts.Log,
		browser:     newBrowserSessions(),
		callFeed:    &callFeed{},
		tailnet:     opts.Tailnet,
		mcp:         opts.MCP,
		public:      opts.Public,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.version == "" {
		s.version = "dev"
	}
	if s.metrics == nil && s.b != nil {
		s.metrics = metrics.New(s.b, s.version)
	}
	s.openAPIDoc = sync.OnceValues(func() ([]byte, error) { return openapi.Broker(openapi.Options{Version: s.version}) })
	s.toolDocs = openapi.NewCache(openapi.Options{Version: s.version}, 0)
	if s.maxDepth <= 0 {
		s.maxDepth = config.DefaultMaxDepth
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	return s
}

// handler builds the router from table. Middleware order, outermost first:
// recover panics, the 404s of OAuth's paths (faces.go), the public face's
// consent page on the tailnet (publicconsent.go), the dashboard's
// pages (which sign browsers in), then for the API: authenticate, compress
// (not event streams), route.
func (s *server) handler(table []route) http.Handler {
	rest := compress(s.router(table))
	return s.recoverer(notOAuth(s.servePublicConsent(s.servePages(s.authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isMCP(r.URL.Path) {
			s.serveMCP(w, r)
			return
		}
		rest.ServeHTTP(w, r)
	}))))))
}

// router mounts table's routes, and nothing else.
func (s *server) router(table []route) chi.Router {
	r := chi.NewRouter()
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.writeProblem(w, r, &broker.Error{Kind: broker.KindNotFound, Op: "route",
			Msg: "no such endpoint: " + r.URL.Path})
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		s.writeProblem(w, r, errMethodNotAllowed)
	})
	for _, rt := range table {
		r.Method(rt.Method, rt.Pattern, s.endpoint(rt))
	}
	return r
}

// endpoint adapts a route's handler: its error becomes a problem response.
func (s *server) endpoint(rt route) http.Handler {
	name := rt.Method + " " + rt.Pattern
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sp := tracing.NoSpan
		if tracing.Enabled() {
			var ctx context.Context
			ctx, sp = tracing.Start(tracing.FromHeader(r.Context(), r.Header), name, tracing.Server)
			sp.SetAttributes(attribute.String("http.route", rt.Pattern), attribute.String("mcpx.operation", rt.Name))
			r = r.WithContext(ctx)
			defer sp.End()
		}
		if err := rt.handle(s, w, r); err != nil {
			tracing.Fail(sp, err)
			s.countRefusal(err)
			s.writeProblem(w, r, err)
		}
	})
}

// compress wraps h with zstd/gzip compression of JSON responses. Event
// streams bypass it entirely: the compressor buffers until it has seen enough
// bytes to decide, which would hold back progress events.
func compress(h http.Handler) http.Handler {
	wrap, err := gzhttp.NewWrapper(gzhttp.ContentTypes([]string{
		"application/json", "application/problem+json",
	}))
	if err != nil {
		panic(err) // the options above are constant and valid
	}
	gz := wrap(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if wantsEvents(r) {
			h.ServeHTTP(w, r)
			return
		}
		gz.ServeHTTP(w, r)
	})
}
