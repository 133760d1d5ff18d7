package main

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
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/wire"
)

// The paths, in the order each round measures them.
var allPaths = []string{"A0", "A0r", "H", "Hraw", "Hx", "U", "Um", "Uwt", "T", "Ur", "F", "G", "Gr", "M", "M1", "Mr", "X"}

// defaultPaths are what a run without -paths measures: those that need
// nothing beyond this module (G and Gr need testdata/npm, M, M1 and Mr the
// daemon's MCP endpoint, X a -url).
var defaultPaths = allPaths[:10]

// daemonPaths need a running `mcpx serve`; mcpxPaths need the mcpx binary.
var (
	daemonPaths = []string{"U", "Um", "Uwt", "T", "Ur", "M", "M1", "Mr"}
	mcpxPaths   = append([]string{"A0", "G"}, daemonPaths...)
)

var pathDesc = map[string]string{
	"A0":   "Go client → `mcpx demo-server` over stdio (the floor)",
	"A0r":  "Go client → minimal hand-written echo child over stdio",
	"H":    "Go client → go-sdk streamable-HTTP echo server, in process (one MCP HTTP hop)",
	"Hraw": "net/http client → net/http POST echo handler, in process (raw HTTP hop)",
	"Hx":   "net/http client → net/http POST echo handler in another process, over a unix socket (raw cross-process hop)",
	"U":    "HTTP over the unix socket → mcpx serve → demo child (scope global)",
	"Um":   "U while another client scrapes GET /metrics every second (over the socket)",
	"Uwt":  "same, scope worktree, Mcpx-Cwd in a git repo (incl. resolution)",
	"T":    "HTTP over loopback TCP → mcpx serve → demo child (scope global)",
	"Ur":   "HTTP over the unix socket → mcpx serve → minimal echo child (global)",
	"F":    "MCP client (mcp/client) → a bare go-sdk Streamable HTTP server with one echo tool, in another process, loopback TCP (the one-hop floor of an MCP endpoint)",
	"G":    "the same client → mcp-hub 4.2.1 (npm) over its HTTP+SSE endpoint → `mcpx demo-server` over stdio (tool a__echo; upstreams a and b)",
	"Gr":   "as G, the upstreams a and b the minimal echo child (tool a__echo): the gateway's own cost",
	"M":    "the same client → mcpx serve's aggregate `/mcp` over loopback TCP with the token → demo child (tool demo__echo)",
	"M1":   "the same client → mcpx serve's `/mcp/demo` over loopback TCP with the token → demo child (tool echo)",
	"Mr":   "as M, to the minimal echo child (tool raw__echo): the endpoint's own cost",
	"X":    "the same client → the endpoint given by -url (tool -tool)",
}

var (
	echoArgs = json.RawMessage(`{"message":"hi"}`)
	echoWant = []byte(`"hi"`)
)

// callTimeout bounds every single call.
const callTimeout = 10 * time.Second

// path is one way to make the echo call. call is safe for concurrent use.
type path struct {
	name string
	call func(ctx context.Context) error
	// procs returns the pids whose CPU this path spends outside this
	// process: the daemon (0 = none) and the child serving the call.
	procs func() (daemon, child int)
	// during, if set, runs beside each of the path's measurements: it
	// starts something and returns what stops it.
	during func() (stop func())
	// mcp is the endpoint of an MCP path, and server the pid whose memory
	// per idle session -sessions measures (0 = unknown).
	mcp    *mcpTarget
	server func() int
}

type pathSet struct {
	list    []*path
	closers []func()
}

func (ps *pathSet) close() {
	for _, c := range slices.Backward(ps.closers) {
		c()
	}
	ps.closers = nil
}

func setupPaths(ctx context.Context, o *options, d *daemon, tmp, wt, self string) (*pathSet, error) {
	ps := &pathSet{}
	for _, name := range o.paths {
		p, err := ps.setup(ctx, o, name, d, tmp, wt, self)
		if err != nil {
			return ps, fmt.Errorf("setting up %s: %w", name, err)
		}
		ps.list = append(ps.list, p)
	}
	return ps, nil
}

func (ps *pathSet) setup(ctx context.Context, o *options, name string, d *daemon, tmp, wt, self string) (*path, error) {
	switch name {
	case "F", "G", "Gr", "M", "M1", "Mr", "X":
		return ps.setupMCP(ctx, o, name, d, tmp, self)
	case "A0", "A0r":
		cmd := exec.Command(o.mcpx, "demo-server")
		if name == "A0r" {
			cmd = exec.Command(self)
			cmd.Env = append(os.Environ(), envRawChild+"=1")
		}
		s, c, err := startStdio(ctx, cmd)
		if err != nil {
			return nil, err
		}
		ps.closers = append(ps.closers, func() { s.Close(); c.stop() })
		return &path{name: name, call: sessionCall(s), procs: func() (int, int) { return 0, c.cmd.Process.Pid }}, nil
	case "H":
		srv := demo.NewServer()
		url, stop, err := serveHTTP(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
		if err != nil {
			return nil, err
		}
		ps.closers = append(ps.closers, stop)
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		s, err := client.Connect(cctx, client.NewHTTP(url, nil, newClient(nil)), client.Options{})
		if err != nil {
			return nil, err
		}
		ps.closers = append(ps.closers, func() { s.Close() })
		return &path{name: name, call: sessionCall(s), procs: none}, nil
	case "Hraw":
		url, stop, err := serveHTTP(http.HandlerFunc(rawEcho))
		if err != nil {
			return nil, err
		}
		ps.closers = append(ps.closers, stop)
		return &path{name: name, call: postCall(newClient(nil), url, nil), procs: none}, nil
	case "Hx":
		sock := filepath.Join(tmp, "hx.sock")
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), envRawHTTP+"="+sock)
		srv, err := startRawHTTP(ctx, cmd, "unix", sock)
		if err != nil {
			return nil, err
		}
		ps.closers = append(ps.closers, srv.stop)
		return &path{name: name, call: postCall(newClient(unixDialer(sock)), "http://hx/echo", nil),
			procs: func() (int, int) { return cmd.Process.Pid, 0 }}, nil
	case "U", "Um", "T", "Ur", "Uwt":
		server, cwd := map[string]string{"U": "demo", "Um": "demo", "T": "demo", "Ur": "raw", "Uwt": "demowt"}[name], ""
		if name == "Uwt" {
			cwd = wt
		}
		client, base := d.unix, "http://mcpx"
		if name == "T" {
			client, base = d.tcp, "http://"+d.addr
		}
		h := http.Header{"Content-Type": {"application/json"}, "Mcpx-Session": {"bench"}, wire.HeaderClient: {"mcpx-bench"}}
		if cwd != "" {
			h.Set("Mcpx-Cwd", cwd)
		}
		if name == "T" {
			h.Set("Authorization", "Bearer "+d.token)
		}
		p := &path{name: name, call: postCall(client, base+"/v1/servers/"+server+"/tools/echo", h)}
		p.procs = func() (int, int) { return d.pid(), d.childPid(server) }
		if name == "Um" {
			p.during = func() func() { return scrapeEvery(ctx, d.unix, time.Second) }
		}
		return p, nil
	}
	return nil, fmt.Errorf("unknown path %q", name)
}

func none() (int, int) { return 0, 0 }

// warmPath starts whatever the path starts lazily (children, connections).
func warmPath(ctx context.Context, p *path) error {
	for range 50 {
		if err := p.call(ctx); err != nil {
			return err
		}
	}
	return nil
}

func sessionCall(s *client.Session) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		res, err := s.CallTool(ctx, "echo", echoArgs, nil)
		if err != nil {
			return err
		}
		if !bytes.Contains(res, echoWant) {
			return fmt.Errorf("unexpected result %.200s", res)
		}
		return nil
	}
}

// postCall POSTs the echo arguments to url and checks the answer.
//
// The measured paths through the daemon (U, Uwt, Ur, T) use this rather than
// client on purpose: every path, Hraw and Hx included, then makes the
// same plain net/http request over a keep-alive pool sized for c=32 (see
// newClient), so the ratios between them are the daemon's cost and nothing
// else. client's transport (compression negotiation, a pool of 4 idle
// connections) suits the CLI but would add its own cost to the daemon paths
// only.
func postCall(client *http.Client, url string, h http.Header) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(echoArgs))
		if err != nil {
			return err
		}
		if h != nil {
			req.Header = h.Clone()
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || !bytes.Contains(body, echoWant) {
			return fmt.Errorf("%s: %.300s", resp.Status, body)
		}
		return nil
	}
}

// newClient is a keep-alive client with enough idle connections for every
// caller; dial nil = TCP.
func newClient(dial func(context.Context, string, string) (net.Conn, error)) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:         dial,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 128,
		IdleConnTimeout:     2 * time.Minute,
	}}
}

func unixDialer(sock string) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}
}

func rawEcho(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

// serveHTTP serves h on a fresh loopback port and returns its URL.
func serveHTTP(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
		<-done
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// stdioChild is a child MCP server this process started.
type stdioChild struct {
	cmd    *exec.Cmd
	stdin  io.Closer
	exited chan struct{}
}

// startStdio starts cmd and initializes an MCP session over its stdio.
func startStdio(ctx context.Context, cmd *exec.Cmd) (*client.Session, *stdioChild, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	c := &stdioChild{cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(c.exited)
	}()
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	s, err := client.Connect(cctx, client.NewStdio(stdout, stdin), client.Options{})
	if err != nil {
		c.stop()
		return nil, nil, err
	}
	return s, c, nil
}

// stop closes stdin (the MCP stdio shutdown) and kills the child if it has
// not exited within two seconds.
func (c *stdioChild) stop() {
	c.stdin.Close()
	select {
	case <-c.exited:
		return
	case <-time.After(2 * time.Second):
	}
	if err := c.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		fmt.Fprintf(os.Stderr, "load: killing child %d: %v\n", c.cmd.Process.Pid, err)
	}
	<-c.exited
}

// scrapeEvery GETs /metrics with hc (the daemon's socket: the owner) every
// interval, as Prometheus would, until the returned stop is called.
func scrapeEvery(ctx context.Context, hc *http.Client, interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://mcpx/metrics", nil)
			req.Header.Set(wire.HeaderClient, "mcpx-bench")
			if resp, err := hc.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}
