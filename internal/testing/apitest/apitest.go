// Package apitest starts the daemon's HTTP face in process for tests: a
// real broker, the MCP endpoint (package api/mcp) and the API (package
// api) over both, served on a real unix socket and a loopback TCP port
// until the test ends.
//
//	func TestMain(m *testing.M) {
//		demo.MaybeServe()    // a demo child: serve and exit
//		apitest.MaybeServe() // a child of this package's: serve and exit
//		os.Exit(m.Run())
//	}
//
//	func TestEcho(t *testing.T) {
//		d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global"}`})
//		r := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"hi"}`)
//		if got := r.Result(t).Text(); got != "hi" {
//			t.Errorf("REST: echo = %q", got)
//		}
//		_, cs := d.ConnectMCP(t, "/mcp/demo", "", nil)
//		echo := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}
//		if got := apitest.CallText(t, cs, echo); got != "hi" {
//			t.Errorf("MCP: echo = %q", got)
//		}
//	}
//
// Options holds the few settings many tests share; what one test needs
// alone it sets through a hook on the options of the part concerned.
//
// Start checks that the test leaves no process behind
// (internal/testing/proctest), and its cleanups stop the listeners, then
// the endpoint's sessions, then the broker and its children. The servers
// of DemoConfig are this test binary re-executed: its TestMain must call
// demo.MaybeServe, and MaybeServe for URLServerConfig's.
//
// Tests only; no product package may import it (deptest's house rules).
package apitest

import (
	"cmp"
	"context"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/api/mcp"
	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// Token is the bearer token of every Daemon's loopback TCP listener.
const Token = "test-token-0123456789"

// Options configure Start. The zero value serves no servers, with every
// part's defaults.
type Options struct {
	// Config is the broker's config; nil = no servers.
	Config *config.Config
	// StateDir is the broker's state directory (its memo, the call log);
	// "" = nothing kept.
	StateDir string
	// Tokens verifies signed bearer tokens and backs /v1/tokens
	// (api.Options.Tokens); nil = none.
	Tokens *auth.Issuer

	// What one test needs alone, each part's options as Start made them,
	// to change before the part is made (a task retention, a resume
	// grace, an input wait); nil = as made.
	Broker func(*broker.Options)
	MCP    func(*mcp.Options)
	API    func(*api.Options)
	// Serve changes both listeners' serve options (DrainTimeout, MaxConns,
	// WriteTimeout); nil = as made. A test that sets DrainTimeout expects
	// a drain to run out: Serve's error is then logged, not a failure.
	Serve func(*api.ServeOptions)
	// Handler makes the API's handler of its options; nil = api.New. (The
	// tests of package api pass the variants of its export_test.go.)
	Handler func(api.Options) http.Handler
	// WrapTCP wraps the loopback listener, to watch what Serve accepts;
	// nil = none.
	WrapTCP func(net.Listener) net.Listener
}

// Daemon is the API and the MCP endpoint over a real broker, served until
// the test ends.
type Daemon struct {
	Broker *broker.Broker
	MCP    *mcp.Server
	// Sock is the unix socket's path; TCPAddr the loopback listener's
	// address (host:port), which takes Token.
	Sock, TCPAddr string
	// Unix requests as a local caller (over the socket: the daemon's own
	// uid); TCP over loopback TCP with Token.
	Unix, TCP *Client
	// Logs is everything the broker, the endpoint and the API logged
	// (children's stderr included), at debug level.
	Logs *testenv.SyncBuffer
	// Shutdown stops both listeners as a signal would: it returns once
	// they have drained. It runs at cleanup; calling it before is allowed.
	Shutdown func()
}

// Start serves the API and the MCP endpoint over a new broker of o.Config.
func Start(t testing.TB, o Options) *Daemon {
	t.Helper()
	proctest.CheckNoLeaks(t) // first: its check runs after every other cleanup
	cfg := o.Config
	if cfg == nil {
		cfg = &config.Config{Servers: map[string]*config.Server{}}
	}
	logs := &testenv.SyncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	d := &Daemon{Sock: filepath.Join(t.TempDir(), "mcpx.sock"), Logs: logs}
	d.Broker = newBroker(t, o, cfg, logger)
	d.MCP = newMCP(t, o, d.Broker, logger)
	ao := api.Options{Broker: d.Broker, MCP: d.MCP, Logger: logger, Version: "test", Token: Token, Tokens: o.Tokens}
	if o.API != nil {
		o.API(&ao)
	}
	handler := o.Handler
	if handler == nil {
		handler = api.New
	}
	d.serve(t, o, handler(ao), logger)
	return d
}

// StartDemo serves the demo servers of DemoConfig(t, servers).
func StartDemo(t testing.TB, servers map[string]string) *Daemon {
	t.Helper()
	return Start(t, Options{Config: DemoConfig(t, servers)})
}

func newBroker(t testing.TB, o Options, cfg *config.Config, logger *slog.Logger) *broker.Broker {
	t.Helper()
	bo := broker.Options{Config: cfg, Logger: logger, StateDir: o.StateDir}
	if o.Broker != nil {
		o.Broker(&bo)
	}
	b, err := broker.New(bo)
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
	return b
}

func newMCP(t testing.TB, o Options, b *broker.Broker, logger *slog.Logger) *mcp.Server {
	mo := mcp.Options{Broker: b, Logger: logger, Version: "test"}
	if o.MCP != nil {
		o.MCP(&mo)
	}
	s := mcp.New(mo)
	t.Cleanup(func() { // before the broker closes: sessions stop their children
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("closing the mcp endpoint: %v", err)
		}
	})
	return s
}

// serve serves h on the unix socket and a loopback port until cleanup,
// which runs before the endpoint and the broker close.
func (d *Daemon) serve(t testing.TB, o Options, h http.Handler, logger *slog.Logger) {
	t.Helper()
	uln, err := api.ListenUnix(d.Sock)
	if err != nil {
		t.Fatal(err)
	}
	tln, err := api.ListenLoopback("127.0.0.1:0")
	if err != nil {
		uln.Close()
		t.Fatal(err)
	}
	d.TCPAddr = tln.Addr().String()
	rt, _ := wire.Lookup(wire.OpAuthRedirect)
	d.Broker.SetSignInRedirect("http://" + d.TCPAddr + rt.Pattern)
	if o.WrapTCP != nil {
		tln = o.WrapTCP(tln)
	}
	so := api.ServeOptions{Logger: logger}
	if o.Serve != nil {
		o.Serve(&so)
	}
	drainRunsOut := so.DrainTimeout != 0
	so.DrainTimeout = cmp.Or(so.DrainTimeout, 5*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, ln := range []net.Listener{uln, tln} {
		wg.Go(func() {
			if err := api.Serve(ctx, ln, h, so); err != nil {
				logger.Info("serve returned", "addr", ln.Addr(), "err", err)
				if !drainRunsOut {
					t.Errorf("serve %s: %v", ln.Addr(), err)
				}
			}
		})
	}
	d.Shutdown = sync.OnceFunc(func() { cancel(); wg.Wait() })
	t.Cleanup(d.Shutdown)
	d.Unix = unixClient(d.Sock)
	d.TCP = &Client{Base: "http://" + d.TCPAddr, HTTP: &http.Client{Transport: withToken{Token}}}
}

// InFlight is how many calls the broker's instances have in flight.
func (d *Daemon) InFlight() int {
	n := 0
	for _, in := range d.Broker.Instances() {
		n += in.InFlight
	}
	return n
}
