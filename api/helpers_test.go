package api_test

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/api/mcp"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/testenv"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/nixresolve"
	"mcpx.dev/mcpx/openapi"
	"mcpx.dev/mcpx/wire"
)

func TestMain(m *testing.M) {
	demo.MaybeServe() // in a child: serve the demo server on stdio and exit
	maybePidClient()  // in a child: ask whoami with Mcpx-Pid values and exit
	maybeNSClient()   // in a child: ask whoami, servers and /mcp and exit
	maybeManyTools()  // in a child: serve an MCP server of many tools and exit
	maybeURLServer()  // in a child: serve the URL-mode elicitation server and exit
	os.Exit(m.Run())
}

// daemon is the API served on a real unix socket and a loopback TCP port.
type daemon struct {
	b    *broker.Broker
	mcp  *mcp.Server
	sock string
	unix *client // over the unix socket: a local caller
	tcp  *client // over loopback TCP
	// tcpAddr is the loopback listener's address.
	tcpAddr string
	logs    *testenv.SyncBuffer
	// toolDocs is the handler's tool-document cache (nil for the owner
	// and panicking handlers).
	toolDocs *openapi.Cache
	// shutdown stops both listeners as a signal would: it returns once
	// they have drained (each Serve's error is logged). Idempotent.
	shutdown func()
}

type daemonOptions struct {
	cfg       *config.Config // nil = no servers
	maxBody   int64
	owner     *int // admit this uid on the socket instead of ours
	panicky   bool
	keepAlive time.Duration
	daemon    *api.Daemon   // Options.Daemon
	drain     time.Duration // 0 = 5s
	// Slow-client limits (0 = the defaults) and a wrapper for the TCP
	// listener, to watch what Serve accepts.
	bodyTimeout, writeTimeout time.Duration
	maxConns                  int
	wrapTCP                   func(net.Listener) net.Listener
	nix                       *nixresolve.Resolver // broker.Options.Nix
	stateDir                  string               // broker.Options.StateDir: "" = no call log
	coldToolDocs              bool                 // every tool document built anew (NewColdToolDocs)
	tokens                    *auth.Issuer         // api.Options.Tokens
	inputWait                 time.Duration        // api.Options.InputWait
	reidentify                time.Duration        // api.Options.Reidentify
	resumeGrace, mcpIdle      time.Duration        // mcp.Options
	taskRetention             time.Duration        // broker.Options.TaskRetention
	tailnet                   *api.Tailnet         // api.Options.Tailnet
	node                      *wire.NodeInfo       // api.Options.Node
}

func startDaemon(t testing.TB, o daemonOptions) *daemon {
	t.Helper()
	cfg := o.cfg
	if cfg == nil {
		cfg = &config.Config{Servers: map[string]*config.Server{}}
	}
	logs := &testenv.SyncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b, err := broker.New(broker.Options{Config: cfg, Logger: logger, Nix: o.nix, StateDir: o.stateDir, TaskRetention: o.taskRetention})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("closing broker: %v", err)
		}
	})
	mcp := mcp.New(mcp.Options{Broker: b, Logger: logger, Version: "test", ResumeGrace: o.resumeGrace, IdleTimeout: o.mcpIdle})
	t.Cleanup(func() { // before the broker closes: sessions stop their children
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := mcp.Close(ctx); err != nil {
			t.Errorf("closing the mcp endpoint: %v", err)
		}
	})
	opts := api.Options{Broker: b, MCP: mcp, Logger: logger, Version: "test", MaxBodyBytes: o.maxBody, KeepAlive: o.keepAlive, Token: testToken, Daemon: o.daemon,
		BodyTimeout: o.bodyTimeout, Tokens: o.tokens, InputWait: o.inputWait, Reidentify: o.reidentify, Tailnet: o.tailnet, Node: o.node}
	var h http.Handler
	var toolDocs *openapi.Cache
	switch {
	case o.owner != nil:
		h = api.NewForOwner(opts, *o.owner)
	case o.panicky:
		h = api.NewPanicking(opts)
	case o.coldToolDocs:
		h = api.NewColdToolDocs(opts)
	default:
		h, toolDocs = api.NewWithToolDocs(opts)
	}
	d := &daemon{b: b, mcp: mcp, sock: filepath.Join(t.TempDir(), "mcpx.sock"), logs: logs, toolDocs: toolDocs}
	uln, err := api.ListenUnix(d.sock)
	if err != nil {
		t.Fatal(err)
	}
	tln, err := api.ListenLoopback("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if o.wrapTCP != nil {
		tln = o.wrapTCP(tln)
	}
	ctx, cancel := context.WithCancel(context.Background())
	drain := cmp.Or(o.drain, 5*time.Second)
	var wg sync.WaitGroup
	for _, ln := range []net.Listener{uln, tln} {
		wg.Go(func() {
			if err := api.Serve(ctx, ln, h, api.ServeOptions{Logger: logger, DrainTimeout: drain,
				MaxConns: o.maxConns, WriteTimeout: o.writeTimeout}); err != nil {
				logger.Info("serve returned", "addr", ln.Addr(), "err", err)
				if o.drain == 0 {
					t.Errorf("serve %s: %v", ln.Addr(), err)
				}
			}
		})
	}
	d.shutdown = sync.OnceFunc(func() { cancel(); wg.Wait() })
	t.Cleanup(d.shutdown) // runs before the broker closes
	d.unix = unixClient(d.sock)
	d.tcp = &client{base: "http://" + tln.Addr().String(), hc: &http.Client{Transport: withToken{testToken}}}
	d.tcpAddr = tln.Addr().String()
	return d
}

// testToken is the bearer token of startDaemon's TCP listener.
const testToken = "test-token-0123456789"

// client makes requests to one listener.
type client struct {
	base string
	hc   *http.Client
}

// withToken sends a bearer token with every request that has no
// Authorization header, and the Mcpx-Client header of the browser guard
// with every request that has none.
type withToken struct{ token string }

func (wt withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if r.Header.Get("Authorization") == "" {
		r.Header.Set("Authorization", "Bearer "+wt.token)
	}
	if r.Header.Get(wire.HeaderClient) == "" {
		r.Header.Set(wire.HeaderClient, "api-test")
	}
	return http.DefaultTransport.RoundTrip(r)
}

func unixClient(sock string) *client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}
	return &client{base: "http://mcpx", hc: &http.Client{Transport: tr}}
}

// response is a finished response with its body read.
type response struct {
	*http.Response
	body []byte
}

func (r *response) problem(t *testing.T) wire.Problem {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q, want application/problem+json; body %s", ct, r.body)
	}
	var p wire.Problem
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("decoding problem %s: %v", r.body, err)
	}
	if p.Status != r.StatusCode {
		t.Errorf("problem status %d, response status %d", p.Status, r.StatusCode)
	}
	return p
}

func (r *response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
}

// do sends a request; headers come in name, value pairs.
func (c *client) do(t *testing.T, method, path, body string, headers ...string) *response {
	t.Helper()
	return c.doCtx(t, t.Context(), method, path, body, headers...)
}

func (c *client) doCtx(t *testing.T, ctx context.Context, method, path, body string, headers ...string) *response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return &response{resp, b}
}
