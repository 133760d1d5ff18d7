package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	oklog "github.com/oklog/run"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/api/wire"
	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/broker/config"
	"mcpx.dev/mcpx/nixresolve"
	"mcpx.dev/mcpx/pool"
)

// serve is `mcpx serve`: the daemon. It serves the API on the unix socket
// (and a loopback TCP address with --listen) until SIGINT or SIGTERM, then
// stops accepting, drains in-flight calls (bounded) and stops every child.
func serve(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "serve")
	configPath := fs.String("config", "", "config file (default $XDG_CONFIG_HOME/mcpx/config.json; if absent, serve the built-in demo server)")
	stateFlag := fs.String("state-dir", "", "state directory (default $XDG_STATE_HOME/mcpx)")
	socketFlag := fs.String("socket", "", "unix socket path (default $XDG_RUNTIME_DIR/mcpx/mcpx.sock, else in the state directory)")
	listen := fs.String("listen", "127.0.0.1:0", "also serve on this loopback TCP address (port 0: any free port; `off`: no TCP); TCP callers need the token of the daemon record")
	maxConns := fs.Int("listen-max-conns", api.DefaultMaxConns, "connections served at once on the --listen address; more wait until one closes (the unix socket is never capped)")
	tailnet := addTailnetFlags(fs)
	chainFlags := addChainFlags(fs)
	drain := fs.Duration("drain-timeout", api.DefaultDrainTimeout, "at shutdown, how long in-flight calls may finish; later ones are answered 503 with Retry-After (then as long again to stop the servers)")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(c, fs, "unexpected argument %q", pos[0])
	}
	if *listen == "off" {
		*listen = ""
	}
	if *maxConns <= 0 {
		return usageError(c, fs, "--listen-max-conns must be positive, e.g. %d", api.DefaultMaxConns)
	}
	if *drain <= 0 {
		return usageError(c, fs, "--drain-timeout must be positive, e.g. 10s")
	}
	if *listen != "" {
		if err := api.CheckLoopback(*listen); err != nil {
			return usageError(c, fs, "--listen: %v", err)
		}
	}
	// Startup errors are for a person at a terminal: plain text, not a log record.
	fail := func(err error) int {
		fmt.Fprintf(c.stderr, "mcpx serve: %v\n", err)
		return exitToolError
	}

	cfg, src, err := loadConfig(*configPath, c.getenv)
	if err != nil {
		return fail(err)
	}
	state, sock, err := daemonPaths(c.getenv, *stateFlag, *socketFlag)
	if err != nil {
		return fail(err)
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		return fail(fmt.Errorf("creating state directory: %w", err))
	}
	log, logFile, err := openLog(cfg.Log, state, c.stderr)
	if err != nil {
		return fail(err)
	}
	defer logFile.Close()
	if src.builtin {
		log.Info("no config file: serving the built-in demo server", "looked", src.looked)
	}
	logConfig(log, cfg)
	// Before the first child: kill what a killed daemon of this state
	// directory left, and keep orphaned grandchildren (see pool.Supervise).
	if sup, err := pool.Supervise(state, log); err != nil {
		log.Warn("not supervising grandchildren", "err", err)
	} else {
		defer sup.Close() // after closeBroker, deferred below
	}

	nix, err := newNixResolver(cfg, src, state, log)
	if err != nil {
		return fail(err)
	}
	defer nix.Close() // after closeBroker: its children are gone by then
	chainOpts, err := chainFlags.options(c.getenv)
	if err != nil {
		return fail(err)
	}
	b, err := broker.New(broker.Options{Config: cfg, Logger: log, Version: version(), StateDir: state, Nix: nix, Chain: chainOpts})
	if err != nil {
		return fail(err)
	}
	defer closeBroker(log, b, *drain)

	node, err := tailnet.node(c.getenv, state, log)
	if err != nil {
		return fail(err)
	}
	uln, tln, err := listenAll(sock, *listen)
	if err != nil {
		return fail(err)
	}
	var nln, sln net.Listener // the tailnet node's HTTP and HTTPS, with --tailnet
	var nodeInfo *wire.NodeInfo
	if node != nil {
		if _, err := node.Up(ctx); err != nil {
			closeAll(uln, tln)
			return fail(err)
		}
		defer node.Close() // after the listeners have drained
		if nln, err = node.Listen(); err != nil {
			closeAll(uln, tln)
			return fail(err)
		}
		// HTTPS on :443 when the tailnet issues a certificate; else nil,
		// and one log line: a missing certificate never stops the daemon.
		if sln, err = node.ListenTLS(ctx); err != nil {
			closeAll(uln, tln, nln)
			return fail(err)
		}
		nodeInfo = nodeDoc(node.Info(), sln != nil)
	}
	ctl := newControl(log, b, src, func() (*config.Config, configSource, error) { return loadConfig(*configPath, c.getenv) })
	token := api.NewToken()
	info := daemonInfo(state, sock, tln, src)
	tokens, err := auth.Open(auth.Options{Dir: filepath.Join(state, "auth")})
	if err != nil {
		closeAll(uln, tln, nln)
		return fail(err)
	}
	h := api.New(api.Options{Broker: b, Logger: log, Version: version(), Token: token, MaxDepth: cfg.Limits.MaxDepth,
		InputWait: cfg.Limits.InputWait.D(),
		Daemon:    &api.Daemon{Info: info, Stop: ctl.stop, Reload: ctl.reloadAPI}, Node: nodeInfo, Tokens: tokens, Log: logFile,
		Tailnet: apiTailnet(node)})
	if err := writeRecord(info, token); err != nil {
		closeAll(uln, tln, nln, sln)
		return fail(err)
	}
	defer removeRecord(log, state)

	var g oklog.Group
	{ // SIGINT, SIGTERM (and ctx) stop the daemon
		g.Add(oklog.SignalHandler(ctx, os.Interrupt, syscall.SIGTERM))
	}
	{ // SIGHUP reloads the config; servers that did not change keep running
		g.Add(reloadActor(ctl))
	}
	if src.path != "" { // the config file changing on disk reloads it, as SIGHUP does
		g.Add(configWatchActor(ctl, src.path, log))
	}
	{ // POST /v1/daemon/stop (`mcpx daemon stop`) stops the daemon
		g.Add(ctl.stopActor())
	}
	{ // the unix socket
		g.Add(serveActor(uln, h, api.ServeOptions{Logger: log, DrainTimeout: *drain}))
	}
	if tln != nil { // loopback TCP
		g.Add(serveActor(tln, h, api.ServeOptions{Logger: log, DrainTimeout: *drain, MaxConns: *maxConns}))
	}
	if nln != nil { // the tailnet node: callers named by WhoIs, rights by their grant
		g.Add(serveActor(nln, h, api.ServeOptions{Logger: log, DrainTimeout: *drain, MaxConns: *maxConns, Identify: node.Identify, Host: node.OwnHost}))
	}
	if sln != nil { // the same over HTTPS, with the tailnet's certificate
		g.Add(serveActor(sln, h, api.ServeOptions{Logger: log, DrainTimeout: *drain, MaxConns: *maxConns, Identify: node.Identify}))
	}
	attrs := []any{"socket", sock, "config", src.String(), "servers", len(cfg.Servers), "state", state, "version", version(), "pid", os.Getpid()}
	if tln != nil {
		attrs = append(attrs, "listen", tln.Addr().String())
	}
	if node != nil {
		attrs = append(attrs, "tailnet", node.Info().DNSName)
	}
	log.Info("mcpx serving", attrs...)

	err = g.Run()
	log.Info("shutting down", "reason", err)
	if errors.Is(err, oklog.ErrSignal) || errors.Is(err, context.Canceled) || errors.Is(err, errStopRequested) {
		return exitOK
	}
	log.Error("mcpx serve stopped", "err", err)
	return exitToolError
}

// newNixResolver builds the resolver of nix: commands from the config's nix
// settings, caching in <state>/nix. Relative flake paths (nix:.#tool) are
// relative to the config file's directory. It runs no nix: specs are
// resolved at their server's first spawn.
func newNixResolver(cfg *config.Config, src configSource, state string, log *slog.Logger) (*nixresolve.Resolver, error) {
	dir := ""
	if src.path != "" {
		dir = filepath.Dir(src.path)
	}
	return nixresolve.New(nixresolve.Options{
		CacheDir: filepath.Join(state, "nix"),
		Binary:   cfg.Nix.Binary,
		Offline:  cfg.Nix.Offline,
		Timeout:  cfg.Nix.Timeout.D(),
		Config:   cfg.Nix.Config,
		Dir:      dir,
		Run:      pool.RunTracked, // the daemon reaps orphans: nix's exit status is the resolver's
		Logger:   log,
	})
}

// daemonPaths applies the defaults for --state-dir and --socket.
func daemonPaths(getenv func(string) string, state, sock string) (string, string, error) {
	var err error
	if state == "" {
		if state, err = stateDir(getenv); err != nil {
			return "", "", err
		}
	}
	if sock == "" {
		if sock, err = defaultSocket(getenv); err != nil {
			return "", "", err
		}
	}
	return state, sock, nil
}

// listenAll opens the unix socket and, if addr is set, the loopback TCP
// listener (else tln is nil). On error nothing is left open.
func listenAll(sock, addr string) (uln, tln net.Listener, err error) {
	if uln, err = api.ListenUnix(sock); err != nil {
		return nil, nil, err
	}
	if addr == "" {
		return uln, nil, nil
	}
	if tln, err = api.ListenLoopback(addr); err != nil {
		uln.Close()
		return nil, nil, fmt.Errorf("--listen: %w", err)
	}
	return uln, tln, nil
}

// closeAll closes the listeners that are not nil.
func closeAll(lns ...net.Listener) {
	for _, ln := range lns {
		if ln != nil {
			ln.Close()
		}
	}
}

// serveActor serves h on ln until interrupted; then it stops accepting and
// drains in-flight requests (bounded by opts.DrainTimeout) before returning,
// so that the group returns only once every listener has drained.
func serveActor(ln net.Listener, h http.Handler, opts api.ServeOptions) (func() error, func(error)) {
	ctx, cancel := context.WithCancel(context.Background())
	return func() error {
			return api.Serve(ctx, ln, h, opts)
		}, func(error) {
			cancel()
		}
}

// reloadActor reloads the config on each SIGHUP until interrupted, with the
// same code as POST /v1/daemon/reload (control.reload).
func reloadActor(ctl *control) (func() error, func(error)) {
	ctx, cancel := context.WithCancel(context.Background())
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return func() error {
			defer signal.Stop(hup)
			for {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-hup:
					ctl.reload("signal") //nolint:errcheck // logged by reload
				}
			}
		}, func(error) {
			cancel()
		}
}

// closeBroker stops every child, bounded by drain.
func closeBroker(log *slog.Logger, b *broker.Broker, drain time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := b.Close(ctx); err != nil {
		log.Error("stopping servers", "err", err)
		return
	}
	log.Info("stopped")
}
