package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"mcpx.dev/mcpx/api/client"
	"mcpx.dev/mcpx/api/wire"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/broker/config"
	"mcpx.dev/mcpx/internal/atomicfile"
)

// The daemon's control: reload (SIGHUP and POST /v1/daemon/reload share
// it), stop (POST /v1/daemon/stop), and its files in the state directory.

// errStopRequested ends the run group after POST /v1/daemon/stop.
var errStopRequested = errors.New("stop requested")

// control reloads and stops one daemon.
type control struct {
	log  *slog.Logger
	b    *broker.Broker
	load func() (*config.Config, configSource, error)

	stopOnce sync.Once
	stopped  chan struct{} // closed by stop

	mu sync.Mutex // serialises reloads
}

func newControl(log *slog.Logger, b *broker.Broker, _ configSource, load func() (*config.Config, configSource, error)) *control {
	return &control{log: log, b: b, load: load, stopped: make(chan struct{})}
}

// reload reads the config again and puts it in force; trigger says why
// ("signal", "api", "config file"). A config that does not load is logged
// with every problem, and the running one kept: a typo must not take down
// the servers other callers are using.
func (ctl *control) reload(trigger string) (wire.Reloaded, error) {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	cfg, src, err := ctl.load()
	if err != nil {
		ctl.log.Error("reloading config: keeping the running config", "trigger", trigger, "err", err)
		ctl.b.ReloadRefused(trigger, err)
		return wire.Reloaded{}, err
	}
	ctl.b.Reload(cfg, trigger)
	ctl.log.Info("config reloaded", "trigger", trigger, "config", src.String(), "servers", len(cfg.Servers))
	logConfig(ctl.log, cfg)
	return wire.Reloaded{Config: src.path, Servers: len(cfg.Servers)}, nil
}

// reloadAPI is reload for the API: a refusal is a config problem whose
// detail (paths, field names) only the daemon's user sees.
func (ctl *control) reloadAPI(context.Context) (wire.Reloaded, error) {
	res, err := ctl.reload("api")
	if err == nil {
		return res, nil
	}
	n := 1
	var ce *config.Error
	if errors.As(err, &ce) {
		n = len(ce.Errs)
	}
	return res, &broker.Error{Kind: broker.KindConfig, Op: "reload config", Err: err,
		Msg:     fmt.Sprintf("the config was not reloaded: %d problem%s; the running config stays in force", n, plural(n)),
		Private: "the config was not reloaded; the running config stays in force: " + err.Error(),
		Hint:    "fix it (`mcpx config check`) and reload again"}
}

// stop begins a graceful shutdown; a second call does nothing.
func (ctl *control) stop() {
	ctl.stopOnce.Do(func() { close(ctl.stopped) })
}

// stopActor returns errStopRequested once stop is called.
func (ctl *control) stopActor() (func() error, func(error)) {
	done := make(chan struct{})
	return func() error {
			select {
			case <-ctl.stopped:
				return errStopRequested
			case <-done:
				return nil
			}
		}, func(error) {
			close(done)
		}
}

func daemonInfo(state, sock string, tln net.Listener, src configSource) wire.DaemonInfo {
	info := wire.DaemonInfo{Pid: os.Getpid(), Version: version(), Socket: sock, Config: src.path,
		State: state, Started: time.Now().UTC().Truncate(time.Second)}
	if tln != nil {
		info.Address = tln.Addr().String()
	}
	return info
}

// writeRecord publishes the daemon record and the token file in the state
// directory, each mode 0600 and replaced atomically. A record of another
// daemon that is still serving is not replaced: two daemons must not share
// a state directory. One of a daemon that died (its pid is gone, or its
// socket no longer answers) is stale and replaced.
func writeRecord(info wire.DaemonInfo, token string) error {
	if old, err := client.ReadRecord(info.State); err == nil && old.Pid != info.Pid && alive(old.Pid) && client.Answers(old.Socket) {
		return fmt.Errorf("another daemon (pid %d, socket %s) uses the state directory %s: stop it with `mcpx daemon stop`, or pass --state-dir", old.Pid, old.Socket, info.State)
	}
	rec := wire.DaemonRecord{DaemonInfo: info, Token: token, TokenFile: filepath.Join(info.State, wire.TokenFile)}
	if info.Address != "" {
		rec.URL = "http://" + info.Address
	}
	doc, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(rec.TokenFile, []byte(token+"\n"), 0o600); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(info.State, wire.RecordFile), append(doc, '\n'), 0o600)
}

// removeRecord removes the record and the token at a clean shutdown, if
// they are still this daemon's.
func removeRecord(log *slog.Logger, state string) {
	rec, err := client.ReadRecord(state)
	if err != nil || rec.Pid != os.Getpid() {
		return
	}
	for _, name := range []string{wire.RecordFile, wire.TokenFile} {
		if err := os.Remove(filepath.Join(state, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			log.Warn("removing the daemon record", "err", err)
		}
	}
}

// alive reports whether process pid exists (and is not a zombie).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return !zombie(pid)
}
