package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/internal/atomicfile"
	"mcpx.dev/mcpx/pool"
	"mcpx.dev/mcpx/wire"
)

// ErrUpgradeRequested ends the run group for an upgrade in place: the
// listeners have stopped accepting and drained, their sockets kept open;
// the caller then calls Upgrader.AfterRun.
var ErrUpgradeRequested = errors.New("upgrade requested")

// Upgrader runs one daemon image's upgrade: POST /v1/daemon/upgrade
// (Request) and SIGUSR2 ask for it; its actor ends the run group;
// AfterRun re-executes the daemon.
type Upgrader struct {
	log *slog.Logger
	gen int // this image's generation

	once sync.Once
	req  chan struct{} // closed by the first request

	mu        sync.Mutex
	binary    string    // guarded by mu: what the requested upgrade runs
	requested time.Time // guarded by mu
}

// NewUpgrader returns the upgrader of the daemon image of generation gen.
func NewUpgrader(log *slog.Logger, gen int) *Upgrader {
	return &Upgrader{log: log, gen: gen, req: make(chan struct{})}
}

// Request checks binary ("" = the binary running) and begins an upgrade
// to it (api.Daemon.Upgrade). A second request while one is under way
// answers as the first did.
func (u *Upgrader) Request(binary string) (wire.Upgrading, error) {
	if err := pool.CanHandoff(); err != nil {
		return wire.Upgrading{}, &broker.Error{Kind: broker.KindUnavailable, Op: "upgrade the daemon", Err: err,
			Msg:  "this daemon cannot upgrade in place: its children would not survive the exec",
			Hint: "restart it instead (`mcpx daemon stop`, then `mcpx serve`)"}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.binary != "" {
		return wire.Upgrading{Generation: u.gen, Binary: u.binary}, nil
	}
	bin, err := checkBinary(binary)
	if err != nil {
		return wire.Upgrading{}, &broker.Error{Kind: broker.KindBadRequest, Op: "upgrade the daemon", Err: err,
			Msg: err.Error(), Hint: "pass --binary the absolute path of an executable mcpx"}
	}
	u.binary, u.requested = bin, time.Now()
	u.once.Do(func() { close(u.req) })
	return wire.Upgrading{Generation: u.gen, Binary: bin}, nil
}

// checkBinary is the binary an upgrade runs: binary, which must be an
// absolute path to an executable regular file, or "" for the one running.
func checkBinary(binary string) (string, error) {
	if binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("finding the running binary: %w", err)
		}
		binary = exe
	}
	if !filepath.IsAbs(binary) {
		return "", fmt.Errorf("binary %q is not an absolute path", binary)
	}
	fi, err := os.Stat(binary)
	if err != nil {
		return "", fmt.Errorf("binary %s: %w", binary, err)
	}
	if !fi.Mode().IsRegular() || unix.Access(binary, unix.X_OK) != nil {
		return "", fmt.Errorf("binary %s is not an executable file", binary)
	}
	return binary, nil
}

// Actor is a run group actor that returns ErrUpgradeRequested once an
// upgrade is requested (Request, or SIGUSR2 for the running binary),
// after telling lns to keep their sockets open as they drain. It listens
// for SIGUSR2 from the moment it is made.
func (u *Upgrader) Actor(lns *Listeners) Actor {
	done := make(chan struct{})
	usr2 := make(chan os.Signal, 1)
	signal.Notify(usr2, syscall.SIGUSR2)
	return Actor{
		Execute: func() error {
			defer signal.Stop(usr2)
			for {
				select {
				case <-u.req:
					lns.keep.Store(true)
					return ErrUpgradeRequested
				case <-usr2:
					if _, err := u.Request(""); err != nil {
						u.log.Error("SIGUSR2: not upgrading", "err", err)
					}
				case <-done:
					return nil
				}
			}
		},
		Interrupt: func(error) { close(done) },
	}
}

// AfterRun is what follows the end of the daemon's run group, which
// returned err. For an upgrade (ErrUpgradeRequested) it closes release,
// if not nil (the tailnet node: tsnet cannot be handed over, and the next
// image brings it up again), then hands the daemon over to the requested
// binary (reexec), with rec's token and start time. It returns only if it
// could not, with why (logged); the caller then shuts down as for a stop.
// Any other err is returned as it is.
func (u *Upgrader) AfterRun(err error, d *Daemon, lns *Listeners, rec *Record, release io.Closer) error {
	if !errors.Is(err, ErrUpgradeRequested) {
		return err
	}
	if release != nil {
		u.log.Info("upgrading: closing the tailnet node; the next image brings it up again")
		release.Close()
	}
	rec.mu.Lock()
	h := Handoff{Version: rec.info.Version, Binary: SelfBinary(), Started: rec.info.Started, Token: rec.token}
	rec.mu.Unlock()
	err = u.reexec(d, lns, h)
	u.log.Error("upgrade failed: shutting down", "err", err)
	return err
}

// reexec hands the daemon over to the requested binary: it writes the
// handoff state (h, with the listeners of lns and the children of d's
// pool) and execs, with the pool frozen. It returns only if it could not:
// a binary that fails to exec is recorded in the state, and the running
// image is executed again instead (it serves on as the next generation,
// saying why in daemon info); only if that fails too does reexec return.
func (u *Upgrader) reexec(d *Daemon, lns *Listeners, h Handoff) error {
	u.mu.Lock()
	bin := u.binary
	h.Requested = u.requested
	u.mu.Unlock()
	h.Generation = u.gen
	ls, conns, err := lns.handOver(d.drain)
	if err != nil {
		lns.closeKept()
		return err
	}
	h.Listeners, h.Conns = ls, conns
	wh := d.webhookHandoff() // no call is in flight; the events after it are handed over with the pool
	h.Webhooks = &wh
	if d.MCP != nil {
		h.MCP = d.MCP.Handoff() // drained: no request is in flight
	}
	path := filepath.Join(d.state, HandoffFile)
	env := append(environWithout(EnvHandoff), EnvHandoff+"="+path)
	err = d.Broker.Handoff(func(st broker.HandoffState) error {
		h.Broker = st
		for _, c := range st.Pool.Children {
			for _, fd := range c.Files() {
				if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
					return fmt.Errorf("keeping the pipes of %s open: %w", c.ID, err)
				}
			}
		}
		if err := writeHandoff(path, h); err != nil {
			return err
		}
		u.log.Info("upgrading: executing", "binary", bin, "children", len(st.Pool.Children), "listeners", len(ls), "connections", len(conns))
		err := syscall.Exec(bin, os.Args, env)
		h.UpgradeError = fmt.Sprintf("executing %s: %v", bin, err)
		u.log.Error("upgrade: the new binary did not run; executing the running one again", "binary", bin, "err", err)
		if werr := writeHandoff(path, h); werr != nil {
			return werr
		}
		return fmt.Errorf("%s; executing the running binary again: %w", h.UpgradeError, syscall.Exec("/proc/self/exe", os.Args, env))
	})
	os.Remove(path)
	lns.closeKept()
	return err
}

func writeHandoff(path string, h Handoff) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, b, 0o600); err != nil {
		return fmt.Errorf("writing the handoff state: %w", err)
	}
	return nil
}

// environWithout is this process's environment without name.
func environWithout(name string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, name+"=") {
			env = append(env, kv)
		}
	}
	return env
}
