package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	oklog "github.com/oklog/run"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/owner"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/daemon"
	"mcpx.dev/mcpx/internal/paths"
	"mcpx.dev/mcpx/tsnet"
	"mcpx.dev/mcpx/wire"
)

// serve is `mcpx serve`: the daemon. It serves the API on the unix socket
// (and a loopback TCP address with --listen) until SIGINT or SIGTERM, then
// stops accepting, drains in-flight calls (bounded) and stops every child.
func serve(ctx context.Context, c *cli, args []string) int {
	f, code, ok := parseServeFlags(c, args)
	if !ok {
		return code
	}
	// Startup errors are for a person at a terminal: plain text, not a log record.
	fail := func(err error) int {
		fmt.Fprintf(c.stderr, "mcpx serve: %v\n", err)
		return exitToolError
	}
	load := func() (*config.Config, daemon.Source, error) { return daemon.LoadConfig(f.config, c.getenv) }
	cfg, src, err := load()
	if err != nil {
		return fail(err)
	}
	state, sock, err := f.paths(c.getenv)
	if err != nil {
		return fail(err)
	}
	chainOpts, err := f.chain.options(c.getenv)
	if err != nil {
		return fail(err)
	}
	handoff, err := daemon.TakeHandoff(c.getenv) // set when an upgrade re-executed this daemon
	if err != nil {
		return fail(err)
	}
	d, err := daemon.New(daemon.Options{Config: cfg, Source: src, StateDir: state, Chain: chainOpts, Version: version(), Drain: f.drain, Stderr: c.stderr, Handoff: handoff})
	if err != nil {
		return fail(err)
	}
	defer d.Close()
	log := d.Log
	node, err := f.tailnet.node(c.getenv, state, log)
	if err != nil {
		return fail(err)
	}
	lns := daemon.Listeners{State: state}
	defer lns.Close() // what a failed start opened; once served, nothing
	so := api.ServeOptions{Logger: log, DrainTimeout: f.drain}
	var tln net.Listener
	if handoff != nil {
		tln, err = lns.Adopt(handoff, sock, f.listen, so, f.maxConns) // the same sockets: no caller was refused
	} else {
		tln, err = lns.Local(sock, f.listen, so, f.maxConns)
	}
	if err != nil {
		return fail(err)
	}
	if tln != nil { // a browser signing in for a caller comes back here (docs/oauth.md)
		rt, _ := wire.Lookup(wire.OpAuthRedirect)
		d.Broker.SetSignInRedirect("http://" + tln.Addr().String() + rt.Pattern)
	}
	var nodeInfo *wire.NodeInfo
	if node != nil {
		if nodeInfo, err = upNode(ctx, node, &lns, so, f.maxConns); err != nil {
			return fail(err)
		}
		defer node.Close() // after the listeners have drained
	}
	var faces api.Faces
	face, err := f.public.open(node, state, cfg.Public, log, &lns, so, func() http.Handler { return faces.Public })
	if err != nil {
		return fail(err)
	}
	ctl := daemon.NewControl(log, d.Broker, src, load)
	token := api.NewToken()
	info := daemon.Info(state, sock, tln, src, version())
	info.Generation = 1
	if handoff != nil {
		token, info.Started, info.Generation, info.UpgradeError = handoff.Token, handoff.Started, handoff.Generation+1, handoff.UpgradeError
	}
	up := daemon.NewUpgrader(log, info.Generation)
	tokens, err := auth.Open(auth.Options{Dir: filepath.Join(state, "auth")})
	if err != nil {
		return fail(err)
	}
	faces = api.NewFaces(api.Options{Broker: d.Broker, MCP: d.MCP, Logger: log, Version: version(), Token: token, MaxDepth: cfg.Limits.MaxDepth,
		InputWait: cfg.Limits.InputWait.D(),
		Daemon:    &api.Daemon{Info: info, Config: ctl.Config, Stop: ctl.Stop, StopNow: ctl.StopNow, Reload: ctl.ReloadAPI, Upgrade: up.Request}, Node: nodeInfo, Tokens: tokens, Log: d.LogFile,
		OwnerTokens: owner.Open(filepath.Join(state, "auth")),
		Tailnet:     apiTailnet(node), Metrics: d.Metrics, CodeCache: filepath.Join(state, "code"), Public: face})
	rec, err := daemon.PublishRecord(log, info, token)
	if err != nil {
		return fail(err)
	}
	ctl.AfterReload(rec.Rewrite) // the record names the config in force
	defer rec.Remove()

	var g oklog.Group
	add := func(a daemon.Actor) { g.Add(a.Execute, a.Interrupt) }
	g.Add(oklog.SignalHandler(ctx, os.Interrupt, syscall.SIGTERM)) // SIGINT, SIGTERM (and ctx) stop the daemon
	add(ctl.HangupActor())                                         // SIGHUP reloads the config; unchanged servers keep running
	add(ctl.WatchActor(src.Watched()))                             // the config file changing on disk (or appearing) reloads it, as SIGHUP does
	add(ctl.StopActor())                                           // POST /v1/daemon/stop (`mcpx daemon stop`) stops the daemon
	add(up.Actor(&lns))                                            // POST /v1/daemon/upgrade and SIGUSR2: drain, keep the sockets, re-execute
	for _, a := range lns.Actors(faces.Private) {
		add(a) // each listener serves until interrupted, then drains
	}
	log.Info("mcpx serving", servingAttrs(sock, src, cfg, state, tln, node)...)
	var release io.Closer // what an upgrade cannot hand over
	if node != nil {
		release = node
	}
	return stopped(log, up.AfterRun(g.Run(), d, &lns, rec, release)) // an upgrade returns only if it failed
}

// stopped logs why the run group returned and is serve's exit code: 0 for
// a signal or a stop request.
func stopped(log *slog.Logger, err error) int {
	log.Info("shutting down", "reason", err)
	if errors.Is(err, oklog.ErrSignal) || errors.Is(err, context.Canceled) || errors.Is(err, daemon.ErrStopRequested) {
		return exitOK
	}
	log.Error("mcpx serve stopped", "err", err)
	return exitToolError
}

// serveFlags are `mcpx serve`'s flags, parsed and checked.
type serveFlags struct {
	config, state, socket string
	ownSocket             bool   // --own-socket, or the config came from $MCPX_CONFIG: the paths of its fingerprint
	listen                string // "" = no TCP
	maxConns              int
	drain                 time.Duration
	tailnet               tailnetFlags
	public                publicFlags
	chain                 chainFlagValues
}

func parseServeFlags(c *cli, args []string) (serveFlags, int, bool) {
	fs := newFlags(c, "serve")
	var f serveFlags
	fs.StringVar(&f.config, "config", "", "config file (default $XDG_CONFIG_HOME/mcpx/config.json; if absent, serve the built-in demo server)")
	fs.StringVar(&f.state, "state-dir", "", "state directory (default $XDG_STATE_HOME/mcpx)")
	fs.StringVar(&f.socket, "socket", "", "unix socket path (default $XDG_RUNTIME_DIR/mcpx/mcpx.sock, else in the state directory)")
	fs.BoolVar(&f.ownSocket, "own-socket", false, "serve on the socket and state directory named by the --config's fingerprint, beside the default daemon (the daemon that mcpx <command> --config FILE reaches; the default when the config comes from $MCPX_CONFIG)")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:0", "also serve on this loopback TCP address (port 0: any free port; \"off\": no TCP); TCP callers need the token of the daemon record")
	fs.IntVar(&f.maxConns, "listen-max-conns", api.DefaultMaxConns, "connections served at once on the --listen address; more wait until one closes (the unix socket is never capped)")
	f.tailnet = addTailnetFlags(fs)
	f.public = addPublicFlags(fs)
	f.chain = addChainFlags(fs)
	fs.DurationVar(&f.drain, "drain-timeout", api.DefaultDrainTimeout, "at shutdown, how long in-flight calls may finish; later ones are answered 503 with Retry-After (then as long again to stop the servers)")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return f, code, false
	}
	bad := func(format string, a ...any) (serveFlags, int, bool) {
		return f, usageError(c, fs, format, a...), false
	}
	if len(pos) > 0 {
		return bad("unexpected argument %q", pos[0])
	}
	if f.listen == "off" {
		f.listen = ""
	}
	if f.config == "" && c.getenv("MCPX_CONFIG") != "" {
		f.config, f.ownSocket = c.getenv("MCPX_CONFIG"), true
	}
	if f.ownSocket && f.config == "" {
		return bad("--own-socket names the daemon of a config file: give --config FILE (or $MCPX_CONFIG)")
	}
	if f.config != "" {
		// Absolute, so that the daemon names it (daemon info, doctor)
		// whatever a client's directory.
		abs, err := filepath.Abs(f.config)
		if err != nil {
			return bad("--config: %v", err)
		}
		f.config = abs
	}
	if f.maxConns <= 0 {
		return bad("--listen-max-conns must be positive, e.g. %d", api.DefaultMaxConns)
	}
	if f.drain <= 0 {
		return bad("--drain-timeout must be positive, e.g. 10s")
	}
	if f.listen != "" {
		if err := api.CheckLoopback(f.listen); err != nil {
			return bad("--listen: %v", err)
		}
	}
	if err := f.public.check(*f.tailnet.on); err != nil {
		return bad("%v", err)
	}
	return f, 0, true
}

// servingAttrs are the attributes of the "mcpx serving" log record.
func servingAttrs(sock string, src daemon.Source, cfg *config.Config, state string, tln net.Listener, node *tsnet.Node) []any {
	attrs := []any{"socket", sock, "config", src.String(), "servers", len(cfg.Servers), "state", state, "version", version(), "pid", os.Getpid()}
	if tln != nil {
		attrs = append(attrs, "listen", tln.Addr().String())
	}
	if node != nil {
		attrs = append(attrs, "tailnet", node.Info().DNSName)
	}
	return attrs
}

// paths are the state directory and socket: those given, else those of the
// config's fingerprint (--own-socket), else the default daemon's.
func (f serveFlags) paths(getenv func(string) string) (string, string, error) {
	own := ""
	if f.ownSocket {
		own = f.config
	}
	d, err := paths.Serve(getenv, own, f.state, f.socket)
	return d.State, d.Socket, err
}
