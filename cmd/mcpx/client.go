package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/paths"
	"mcpx.dev/mcpx/wire"
)

// brokerOpts are the flags that say which broker to talk to, and how.
type brokerOpts struct {
	addr      string // --broker
	remote    string // --remote: a broker saved in the client config
	tsnet     bool   // --tsnet: reach a tailnet name through an embedded node
	tokenFile string // --token-file
	config    string // --config: the daemon of this config file (paths.Of)
	// standalone (--standalone, standalone.go): serve the command from a
	// pool in this process, not a daemon.
	standalone bool
	// chain: the command's --override-paths and --fallback-paths, which a
	// --standalone pool takes as its own (nil: the command has none).
	chain *chainFlagValues
}

// brokerFlag registers --broker, --tsnet and --token-file on fs.
func brokerFlag(fs *flag.FlagSet) *brokerOpts {
	bo := new(brokerOpts)
	fs.StringVar(&bo.addr, "broker", "", "the daemon: a unix socket path, an http(s):// URL, or a tailnet name such as sandbox (default $MCPX_BROKER, else the default remote, else the default socket)")
	fs.StringVar(&bo.remote, "remote", "", "a broker saved with `mcpx remote add` (default $MCPX_REMOTE, else the default remote); local = the local daemon")
	fs.BoolVar(&bo.tsnet, "tsnet", false, "reach a tailnet --broker through an embedded tailnet node (state in <state dir>/tsnet-client) rather than this machine's tailscaled")
	fs.StringVar(&bo.tokenFile, "token-file", "", "file holding the bearer token for an http(s) or tailnet broker (default $MCPX_TOKEN)")
	if fs.Lookup("config") == nil { // `mcpx config --sources` has its own --config
		fs.StringVar(&bo.config, "config", "", "reach (and start on demand) the daemon of this config file, on its own socket (default $MCPX_CONFIG, else the default daemon)")
	}
	return bo
}

// newBrokerClient resolves --broker, then $MCPX_BROKER, then the default
// socket. A bare tailnet name is reached by MagicDNS through the machine's
// tailscaled, or with --tsnet through an embedded node brought up here
// (closed when the command ends). Other addresses are not dialled until
// the first request.
func newBrokerClient(ctx context.Context, c *cli, bo *brokerOpts) (*client.Client, error) {
	if err := bo.resolve(c); err != nil {
		return nil, err
	}
	addr := bo.addr
	if addr == "" {
		addr = c.getenv("MCPX_BROKER")
	}
	chosen, err := paths.Of(c.getenv, bo.config)
	if err != nil && (addr == "" || bo.config != "") {
		return nil, err
	}
	c.daemon = &chosen
	if addr == "" {
		addr = chosen.Socket
	}
	if bo.standalone {
		if bo.addr != "" || bo.tsnet {
			return nil, fmt.Errorf("--standalone runs the pool in this process: drop --broker / --remote / --tsnet")
		}
		if addr, err = startStandalone(ctx, c, chosen.Config, bo.chain); err != nil {
			return nil, err
		}
	}
	state := chosen.State // "": the client looks in the default place, or not at all
	opts := client.Options{StateDir: state}
	if opts.Token, err = brokerToken(c, bo.tokenFile); err != nil {
		return nil, err
	}
	addr, tailnet := client.BrokerAddr(addr)
	if bo.tsnet {
		if !tailnet && !strings.HasPrefix(addr, "http://") && !strings.HasPrefix(addr, "https://") {
			return nil, fmt.Errorf("--tsnet reaches a broker on the tailnet (--broker sandbox, or https://sandbox.example.ts.net), not the socket %s", addr)
		}
		n, err := tsnetNode(ctx, c, state)
		if err != nil {
			return nil, err
		}
		opts.Dial = n.Dial
	}
	return client.New(addr, opts), nil
}

// brokerToken is the bearer token of --token-file, else $MCPX_TOKEN, else
// "" (the client then uses a local daemon's own token).
func brokerToken(c *cli, file string) (string, error) {
	if file == "" {
		return strings.TrimSpace(c.getenv("MCPX_TOKEN")), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// autostartFlag registers --no-autostart on fs.
func autostartFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("no-autostart", false, "fail rather than start a daemon when none answers on the socket (also $MCPX_NO_AUTOSTART=1)")
}

// autostart starts the daemon the command chose when none answers on bc's
// socket, unless off or the policy says not to (client.Client.Autostart).
func autostart(ctx context.Context, c *cli, bc *client.Client, off bool) error {
	d := chosenDaemonOf(c)
	pid, err := bc.Autostart(ctx, client.AutostartOptions{Socket: d.Socket, StateDir: d.State, Config: d.Config, Off: off, Getenv: c.getenv})
	if err != nil {
		return err
	}
	if pid != 0 {
		fmt.Fprintf(c.stderr, "mcpx: started the daemon (pid %d, log %s)\n", pid, filepath.Join(d.State, wire.LogFile))
	}
	return nil
}

// callerOpts are the flags that say who is calling and from where.
type callerOpts struct {
	cwd     string // --cwd; "" = $PWD (if it is the working directory), else os.Getwd
	session string // --session; "" = $MCPX_SESSION_ID
	lease   string // --lease; "" = $MCPX_LEASE
	scope   string // --scope; "" = $MCPX_SCOPE
}

// callerClient is the client of the broker at addr (started on demand unless
// noAutostart) and this process as its caller: what a command that calls
// tools needs before its first request.
func callerClient(ctx context.Context, c *cli, bo *brokerOpts, noAutostart bool, co *callerOpts) (*client.Client, client.Caller, error) {
	bc, err := newBrokerClient(ctx, c, bo)
	if err != nil {
		return nil, client.Caller{}, err
	}
	if err := autostart(ctx, c, bc, noAutostart); err != nil {
		return nil, client.Caller{}, err
	}
	caller, err := co.caller(c)
	if err != nil {
		return nil, client.Caller{}, err
	}
	if bc.Remote() {
		if caller.Cwd, err = remoteCwd(c, co.cwd, caller.Cwd); err != nil {
			return nil, client.Caller{}, err
		}
	}
	return bc, caller, nil
}

// callerFlags declares --cwd and --session on fs; cwdUse says what the
// directory is for ("the call is made from", …).
func callerFlags(fs *flag.FlagSet, cwdUse string) *callerOpts {
	co := new(callerOpts)
	fs.StringVar(&co.cwd, "cwd", "", cwdUse+" (default $PWD)")
	fs.StringVar(&co.session, "session", "", "the caller's session id (default $MCPX_SESSION_ID)")
	fs.StringVar(&co.lease, "lease", "", "a lease id that pid-scoped instances live by (default $MCPX_LEASE, which mcpx lease run sets)")
	fs.StringVar(&co.scope, "scope", "", "a scope to use instead of the server's, if its scopePolicy allows it (default $MCPX_SCOPE)")
	return co
}

// caller describes this process to the broker (the Mcpx-* headers).
func (o callerOpts) caller(c *cli) (client.Caller, error) {
	cwd, err := callerCwd(o.cwd, c.getenv)
	if err != nil {
		return client.Caller{}, err
	}
	return client.Caller{
		Cwd:           cwd,
		Session:       cmp.Or(o.session, c.getenv("MCPX_SESSION_ID")),
		ParentSession: c.getenv("MCPX_PARENT_SESSION_ID"),
		Lease:         cmp.Or(o.lease, c.getenv("MCPX_LEASE")),
		Scope:         cmp.Or(o.scope, c.getenv("MCPX_SCOPE")),
		ScopeFrom:     scopeFrom(o.scope, c.getenv("MCPX_SCOPE")),
		// The CLI lives for one call; a pid-scoped instance belongs to the
		// process that runs it (the shell or the agent), so send the parent.
		Pid: os.Getppid(),
	}, nil
}

// callerCwd is --cwd made absolute, else $PWD, else os.Getwd. $PWD keeps
// the path the user sees (symlinks included) but is only used when it names
// the working directory: a program that starts mcpx in another directory
// often passes its own PWD along, and a stale PWD would pick the wrong scope.
func callerCwd(flagValue string, getenv func(string) string) (string, error) {
	if flagValue != "" {
		abs, err := filepath.Abs(flagValue)
		if err != nil {
			return "", fmt.Errorf("--cwd: %w", err)
		}
		return abs, nil
	}
	if pwd := getenv("PWD"); filepath.IsAbs(pwd) {
		a, errA := os.Stat(pwd)
		b, errB := os.Stat(".")
		if errA == nil && errB == nil && os.SameFile(a, b) {
			return pwd, nil
		}
	}
	return os.Getwd()
}

// report prints err for the user and returns the exit code for it.
func report(c *cli, err error) int {
	var unreachable *client.UnreachableError
	var p *wire.Problem
	var start *client.StartError
	switch {
	case errors.As(err, &start):
		fmt.Fprintf(c.stderr, "mcpx: %v\n", start)
		return exitUnreachable
	case errors.As(err, &unreachable):
		fmt.Fprintf(c.stderr, "mcpx: %v\n%s\n", unreachable, unreachableHint(c, unreachable))
		return exitUnreachable
	case errors.As(err, &p):
		fmt.Fprintf(c.stderr, "mcpx: %s\n", problemText(p))
		if p.StderrTail != "" {
			fmt.Fprintf(c.stderr, "server stderr (last lines):\n%s\n", strings.TrimRight(p.StderrTail, "\n"))
		}
		return exitFailed
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(c.stderr, "mcpx: interrupted")
		return exitFailed
	default:
		fmt.Fprintf(c.stderr, "mcpx: %v\n", err)
		return exitFailed
	}
}

// chosenDaemonOf is the daemon newBrokerClient chose, else that of
// $MCPX_CONFIG (or the default); zero if the paths cannot be found.
func chosenDaemonOf(c *cli) paths.Daemon {
	if c.daemon != nil {
		return *c.daemon
	}
	d, _ := paths.Of(c.getenv, "")
	return d
}

func unreachableHint(c *cli, e *client.UnreachableError) string {
	if e.Unix && !chosenDaemonOf(c).SocketIs(e.Addr) {
		return fmt.Sprintf("nothing serves the socket %s, and mcpx starts a daemon by itself only on its default socket: "+
			"start this one with `mcpx serve --socket %s` (with the --config and --state-dir it should serve), or drop --broker / $MCPX_BROKER", e.Addr, e.Addr)
	}
	if e.Unix {
		return fmt.Sprintf("is `mcpx serve` running? socket %s; start it with `mcpx serve` (or drop --no-autostart / MCPX_NO_AUTOSTART)", e.Addr)
	}
	if client.New(e.Addr, client.Options{}).Remote() {
		return "is `mcpx serve --tailnet` running there, and is this machine on its tailnet? (`tailscale status`, or --tsnet for a node of mcpx's own)"
	}
	return "is `mcpx serve` running? start it with `mcpx serve`"
}

// problemText is one line: what failed and why.
func problemText(p *wire.Problem) string {
	s := p.Detail
	// A detail that names the server as a word needs no prefix; one that
	// only contains it ("everythin" in `did you mean "everything"`) does.
	if p.Server != "" && !regexp.MustCompile(`\b`+regexp.QuoteMeta(p.Server)+`\b`).MatchString(s) {
		s = fmt.Sprintf("server %s: %s", p.Server, s)
	}
	if p.Status != 0 {
		s += fmt.Sprintf(" (%d %s)", p.Status, p.Kind())
	}
	return s
}

// scopeFrom is the kind of caller a scope override comes from: the --scope
// flag, else $MCPX_SCOPE (Mcpx-Scope-From).
func scopeFrom(flagValue, env string) string {
	switch {
	case flagValue != "":
		return "flag"
	case env != "":
		return "env"
	}
	return ""
}
