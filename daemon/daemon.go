package daemon

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/api/mcp"
	"mcpx.dev/mcpx/api/metrics"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/config/chain"
	"mcpx.dev/mcpx/nixresolve"
	"mcpx.dev/mcpx/observe/daemonlog"
	"mcpx.dev/mcpx/observe/webhook"
	"mcpx.dev/mcpx/pool/proc"
)

// Options configure New.
type Options struct {
	Config *config.Config
	Source Source
	// StateDir is the daemon's state directory, created (0700) if missing;
	// an existing one is made 0700, and one of another user refused.
	StateDir string
	// Chain are the broker's config chain options.
	Chain chain.Options
	// Version is the daemon's, for the broker and the API.
	Version string
	// Drain bounds stopping the children at Close; 0 = api.DefaultDrainTimeout.
	Drain time.Duration
	// Stderr gets the log as text, beside the JSON file; nil = none.
	Stderr io.Writer
	// Getenv reads the daemon's variables (webhook secrets); nil = os.Getenv.
	Getenv func(string) string
	// Webhook tunes the webhooks' sender (its Hooks and Logger are the
	// daemon's); the zero value is the defaults.
	Webhook webhook.Options
	// Handoff, if set, is what the daemon's previous image handed over
	// (TakeHandoff): its children are adopted.
	Handoff *Handoff
}

// Daemon is what a daemon serves: its log and its broker, with what they
// need (the supervisor of grandchildren, the nix resolver). New makes it;
// the caller serves it on Listeners and must Close it.
type Daemon struct {
	Log     *slog.Logger
	LogFile *daemonlog.File // the log's file, for GET /v1/log
	Broker  *broker.Broker
	MCP     *mcp.Server      // the MCP endpoint's sessions, served by api at /mcp
	Metrics *metrics.Metrics // the Prometheus metrics, for api.Options.Metrics
	// Webhooks sends the lifecycle events to the config's webhooks; nil
	// when it has none.
	Webhooks *webhook.Sender

	drain      time.Duration
	state      string       // the state directory
	webhookRun string       // the prefix of the webhooks' delivery ids (WebhookHandoff.Run)
	webhooks   *webhookFeed // nil without webhooks
	closers    []func()     // what New opened, in order
}

// New creates the state directory (an existing one open to other users is
// made 0700, with a warning), opens the log, supervises grandchildren
// (see proc.Supervise; a failure is a warning), builds the nix resolver and
// the broker. On error nothing is left open.
func New(o Options) (_ *Daemon, err error) {
	d := &Daemon{drain: o.Drain, state: o.StateDir}
	if d.drain <= 0 {
		d.drain = api.DefaultDrainTimeout
	}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	restricted, err := privateStateDir(o.StateDir)
	if err != nil {
		return nil, err
	}
	stderr := o.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if d.Log, d.LogFile, err = OpenLog(o.Config.Log, o.StateDir, stderr, getenv); err != nil {
		return nil, err
	}
	d.closers = append(d.closers, func() { d.LogFile.Close() })
	if restricted != 0 {
		d.Log.Warn("the state directory was open to other users: restricted it to its owner", "state", o.StateDir, "was", fmt.Sprintf("%04o", restricted))
	}
	if o.Source.Builtin {
		d.Log.Info("no config file: serving the built-in demo server", "looked", o.Source.Looked)
	}
	LogConfig(d.Log, o.Config)
	if err := d.startTracing(o.Config.OTel); err != nil {
		return nil, err
	}
	// Before the first child: kill what a killed daemon of this state
	// directory left, and keep orphaned grandchildren (see proc.Supervise).
	claimHandoff(o.Handoff) // first: the children handed over are ours
	if sup, err := proc.Supervise(o.StateDir, d.Log); err != nil {
		d.Log.Warn("not supervising grandchildren", "err", err)
	} else {
		d.closers = append(d.closers, func() { sup.Close() })
	}
	nix, err := NixResolver(o.Config, o.Source, o.StateDir, d.Log)
	if err != nil {
		return nil, err
	}
	d.closers = append(d.closers, func() { nix.Close() }) // after the broker: its children are gone by then
	hooks, err := webhookHooks(o.Config.Webhooks, getenv)
	if err != nil {
		return nil, err
	}
	d.Broker, err = broker.New(broker.Options{Config: o.Config, Logger: d.Log, Version: o.Version, StateDir: o.StateDir, Nix: nix, Chain: o.Chain})
	if err != nil {
		return nil, err
	}
	d.Metrics = metrics.New(d.Broker, o.Version)
	d.closers = append(d.closers, d.stopWebhooks) // after the broker: its children's last events are sent
	d.closers = append(d.closers, d.closeBroker)
	var wh *WebhookHandoff
	if o.Handoff != nil {
		d.adoptChildren(o.Handoff, o.Version)
		wh = o.Handoff.Webhooks
	} else {
		d.adoptSurvivors()
	}
	// After the adoption, which puts the predecessor's events back: the
	// webhooks get those after the last it fed them.
	d.startWebhookFeed(hooks, o.Webhook, wh)
	d.MCP = mcp.New(mcp.Options{Broker: d.Broker, Logger: d.Log, Version: o.Version,
		InputWait: o.Config.Limits.InputWait.D()})
	if o.Handoff != nil {
		d.MCP.Restore(o.Handoff.MCP) // before the endpoint serves
	}
	d.closers = append(d.closers, d.closeMCP) // before the broker: its sessions stop their children
	return d, nil
}

// closeMCP ends the MCP endpoint's sessions (bounded by Options.Drain).
func (d *Daemon) closeMCP() {
	ctx, cancel := context.WithTimeout(context.Background(), d.drain)
	defer cancel()
	if err := d.MCP.Close(ctx); err != nil {
		d.Log.Warn("ending mcp sessions", "err", err)
	}
}

// privateStateDir creates dir 0700 if missing, or makes an existing one
// 0700, as the socket is made 0600: it holds the token and the record,
// which give whoever reads them the owner's rights. It returns the mode it
// replaced (0 if none). A directory of another user, or one whose mode
// cannot be changed, is refused.
func privateStateDir(dir string) (fs.FileMode, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, fmt.Errorf("creating state directory: %w", err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return 0, fmt.Errorf("state directory: %w", err)
	}
	if !st.IsDir() {
		return 0, fmt.Errorf("state directory %s is not a directory", dir)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		return 0, fmt.Errorf("state directory %s is owned by uid %d, not by this user (uid %d): chown it, or pass another --state-dir", dir, sys.Uid, os.Getuid())
	}
	mode := st.Mode().Perm()
	if mode&0o077 == 0 {
		return 0, nil
	}
	if err := os.Chmod(dir, mode&0o700); err != nil {
		return 0, fmt.Errorf("state directory %s is mode %04o, open to other users, and restricting it failed: %w; run chmod 700 %s", dir, mode, err, dir)
	}
	return mode, nil
}

// Close stops every child (bounded by Options.Drain), then closes the nix
// resolver, the supervisor and the log, in that order.
func (d *Daemon) Close() {
	for _, f := range slices.Backward(d.closers) {
		f()
	}
	d.closers = nil
}

func (d *Daemon) closeBroker() {
	ctx, cancel := context.WithTimeout(context.Background(), d.drain)
	defer cancel()
	if err := d.Broker.Close(ctx); err != nil {
		d.Log.Error("stopping servers", "err", err)
		return
	}
	d.Log.Info("stopped")
}

// NixResolver builds the resolver of nix: commands from the config's nix
// settings, caching in <state>/nix. Relative flake paths (nix:.#tool) are
// relative to the config file's directory. It runs no nix: specs are
// resolved at their server's first spawn.
func NixResolver(cfg *config.Config, src Source, state string, log *slog.Logger) (*nixresolve.Resolver, error) {
	dir := ""
	if src.Path != "" {
		dir = filepath.Dir(src.Path)
	}
	return nixresolve.New(nixresolve.Options{
		CacheDir: filepath.Join(state, "nix"),
		Binary:   cfg.Nix.Binary,
		Offline:  cfg.Nix.Offline,
		Timeout:  cfg.Nix.Timeout.D(),
		Config:   cfg.Nix.Config,
		Dir:      dir,
		Run:      proc.RunTracked, // the daemon reaps orphans: nix's exit status is the resolver's
		Logger:   log,
	})
}

// LogDir is the directory of the daemon's JSON log in the state directory.
const LogDir = "logs"

// LogPath is the daemon's current JSON log file in state (what `mcpx log`
// reads). A daemon started by a client (client.EnsureDaemon) also writes
// its stderr to wire.LogFile; one in the foreground writes it to the
// terminal.
func LogPath(state string) string {
	return filepath.Join(state, LogDir, daemonlog.Name)
}

// OpenLog opens the daemon's log: JSON records in <state>/logs (package
// logs) and text on stderr. A record's level is its session's
// (log.sessions), else its server's (log.servers), else the global one:
// $MCPX_LOG_LEVEL (read with getenv), else log.level, both sinks; with
// neither, debug to the file and info to stderr.
func OpenLog(lc config.Log, state string, stderr io.Writer, getenv func(string) string) (*slog.Logger, *daemonlog.File, error) {
	file := daemonlog.Levels{Level: slog.LevelDebug, Servers: map[string]slog.Level{}, Sessions: map[string]slog.Level{}}
	for name, l := range lc.Servers {
		file.Servers[name], _ = daemonlog.ParseLevel(l) // checked at load
	}
	for key, l := range lc.Sessions {
		file.Sessions[key], _ = daemonlog.ParseLevel(l)
	}
	errs := file
	errs.Level = slog.LevelInfo
	if lc.Level != "" {
		file.Level, _ = daemonlog.ParseLevel(lc.Level)
		errs.Level = file.Level
	}
	env := getenv(LogLevelEnv)
	badEnv := false
	if env != "" {
		if l, err := daemonlog.ParseLevel(env); err == nil {
			file.Level, errs.Level = l, l
		} else {
			badEnv = true
		}
	}
	f, err := daemonlog.Open(daemonlog.Options{Dir: filepath.Join(state, LogDir), MaxBytes: lc.MaxBytes, MaxFiles: lc.MaxFiles})
	if err != nil {
		return nil, nil, err
	}
	all := &slog.HandlerOptions{Level: slog.LevelDebug} // the levels are daemonlog.Levels'
	log := slog.New(slog.NewMultiHandler(
		daemonlog.NewHandler(file, slog.NewJSONHandler(f, all)),
		daemonlog.NewHandler(errs, slog.NewTextHandler(stderr, all))))
	if badEnv {
		log.Warn("$"+LogLevelEnv+" is not a level: the config's levels apply", "value", env,
			"hint", "set it to debug, info, warn or error, or unset it")
	}
	return log, f, nil
}

// LogLevelEnv names the variable that sets the daemon's global log level,
// over the config's log.level (scripts read it too, for their records).
const LogLevelEnv = "MCPX_LOG_LEVEL"
