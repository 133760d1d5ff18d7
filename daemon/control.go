package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/wire"
)

// ErrStopRequested ends the run group after Control.Stop (POST
// /v1/daemon/stop).
var ErrStopRequested = errors.New("stop requested")

// Control reloads and stops one daemon: SIGHUP, POST /v1/daemon/reload and
// a change of the config file share Reload; POST /v1/daemon/stop is Stop.
type Control struct {
	log  *slog.Logger
	b    *broker.Broker
	load func() (*config.Config, Source, error)

	stopOnce sync.Once
	stopped  chan struct{} // closed by Stop

	mu    sync.Mutex   // serialises reloads; guards src and after
	src   Source       // where the config in force came from
	after func(Source) // called after each reload that loaded, under mu
}

// NewControl returns the control of the daemon serving b, whose config
// came from src; load reads the config again, as the daemon first read it.
func NewControl(log *slog.Logger, b *broker.Broker, src Source, load func() (*config.Config, Source, error)) *Control {
	return &Control{log: log, b: b, src: src, load: load, stopped: make(chan struct{})}
}

// AfterReload has f called, with the new config's source, after each
// reload that put a config in force (Record.Rewrite: the daemon record
// names the config in force). Reloads wait for f.
func (ctl *Control) AfterReload(f func(Source)) {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	ctl.after = f
}

// Config is the path of the config file in force, "" for the built-in
// config (api.Daemon.Config): a reload can change it, as when the default
// config file is written after the daemon started.
func (ctl *Control) Config() string {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	return ctl.src.Path
}

// Reload reads the config again and puts it in force; trigger says why
// ("signal", "api", "config file"). A config that does not load is logged
// with every problem, and the running one kept: a typo must not take down
// the servers other callers are using.
func (ctl *Control) Reload(trigger string) (wire.Reloaded, error) {
	return ctl.reload(trigger, nil)
}

// reload is Reload; a refusal is not logged when unchanged says the file
// moved while it was read (ReloadChanged).
func (ctl *Control) reload(trigger string, unchanged func() bool) (wire.Reloaded, error) {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	cfg, src, err := ctl.load()
	if err != nil && unchanged != nil && !unchanged() {
		ctl.log.Info("the config file changed while it was read; waiting for it to settle", "trigger", trigger)
		return wire.Reloaded{}, err
	}
	if err != nil {
		ctl.log.Error("reloading config: keeping the running config", "trigger", trigger, "err", err)
		ctl.b.ReloadRefused(trigger, err)
		return wire.Reloaded{}, err
	}
	ctl.b.Reload(cfg, trigger)
	ctl.src = src
	if ctl.after != nil {
		ctl.after(src)
	}
	ctl.log.Info("config reloaded", "trigger", trigger, "config", src.String(), "servers", len(cfg.Servers))
	LogConfig(ctl.log, cfg)
	return wire.Reloaded{Config: src.Path, Servers: len(cfg.Servers)}, nil
}

// ReloadChanged is the watch's reload of the file at path (trigger "config
// file"). A refusal is not logged, nor an event, when the file moved while
// it was read: its writer was caught between truncating and writing
// (os.WriteFile, many editors), and the watch sees the write land and
// calls again.
func (ctl *Control) ReloadChanged(path string) {
	at := StampOf(path)
	ctl.reload("config file", func() bool { return StampOf(path) == at }) //nolint:errcheck // logged by reload
}

// ReloadAPI is Reload for the API (api.Daemon.Reload): a refusal is a
// config problem whose detail (paths, field names) only the daemon's user
// sees.
func (ctl *Control) ReloadAPI(context.Context) (wire.Reloaded, error) {
	res, err := ctl.Reload("api")
	if err == nil {
		return res, nil
	}
	n := 1
	var ce *config.Error
	if errors.As(err, &ce) {
		n = len(ce.Errs)
	}
	s := "s"
	if n == 1 {
		s = ""
	}
	return res, &broker.Error{Kind: broker.KindConfig, Op: "reload config", Err: err,
		Msg:     fmt.Sprintf("the config was not reloaded: %d problem%s; the running config stays in force", n, s),
		Private: "the config was not reloaded; the running config stays in force: " + err.Error(),
		Hint:    "fix it (`mcpx config check`) and reload again"}
}

// Stop begins a graceful shutdown (api.Daemon.Stop): StopActor returns.
// A second call does nothing.
func (ctl *Control) Stop() {
	ctl.stopOnce.Do(func() { close(ctl.stopped) })
}

// StopActor is a run group actor that returns ErrStopRequested once Stop
// is called.
func (ctl *Control) StopActor() Actor {
	done := make(chan struct{})
	return Actor{
		Execute: func() error {
			select {
			case <-ctl.stopped:
				return ErrStopRequested
			case <-done:
				return nil
			}
		},
		Interrupt: func(error) { close(done) },
	}
}

// HangupActor is a run group actor that reloads the config on each SIGHUP
// until interrupted. It listens for SIGHUP from the moment it is made.
func (ctl *Control) HangupActor() Actor {
	ctx, cancel := context.WithCancel(context.Background())
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return Actor{
		Execute: func() error {
			defer signal.Stop(hup)
			for {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-hup:
					ctl.Reload("signal") //nolint:errcheck // logged by Reload
				}
			}
		},
		Interrupt: func(error) { cancel() },
	}
}

// WatchActor is a run group actor that reloads the config when the file at
// path changes (WatchConfig), until interrupted; path need not exist yet
// (Source.Watched). Its first stamp is taken now, not when the group runs:
// a change meanwhile is seen. A reload by other means (SIGHUP, the API)
// does not stop it.
func (ctl *Control) WatchActor(path string) Actor {
	ctx, cancel := context.WithCancel(context.Background())
	first := StampOf(path)
	return Actor{
		Execute: func() error {
			WatchConfig(ctx, path, first, ConfigPoll, ConfigSettle, ctl.log, func() { ctl.ReloadChanged(path) })
			return ctx.Err()
		},
		Interrupt: func(error) { cancel() },
	}
}
