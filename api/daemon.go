package api

import (
	"context"
	"net/http"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// Daemon is what the /v1/daemon routes act on and /v1/whoami reports: the
// daemon process around the API, which the API itself does not own.
type Daemon struct {
	Info wire.DaemonInfo // constant after New
	// Config, if set, is the path of the config file in force, which a
	// reload can change; it replaces Info.Config ("" = the built-in config).
	Config func() string
	// Stop begins a graceful shutdown and returns at once; the handler
	// calls it after answering. It must be safe to call more than once.
	Stop func()
	// StopNow is Stop with no drain (?force=true): it stops every child at
	// once, cutting the calls in flight, then begins the shutdown; nil =
	// a forced stop is refused.
	StopNow func()
	// Reload reads the config again and puts it in force, or returns why
	// not (a *broker.Error of KindConfig); the running config then stays.
	// It is the same code as SIGHUP's.
	Reload func(ctx context.Context) (wire.Reloaded, error)
	// Upgrade checks binary ("" = the running one) and begins an upgrade
	// in place (api/upgrade.go), or returns why not.
	Upgrade func(binary string) (wire.Upgrading, error)
}

// daemonInfo is the daemon's description for c: only its owner (the
// daemon's uid on the socket, or a TCP caller with its token) sees where
// its files are.
func (s *server) daemonInfo(c broker.Caller) *wire.DaemonInfo {
	if s.daemon == nil || !isOwner(c) {
		return nil
	}
	info := s.daemon.Info
	if s.daemon.Config != nil {
		info.Config = s.daemon.Config()
	}
	return &info
}

// isOwner reports whether c is the daemon's own user: a unix-socket caller
// of its uid, or a loopback TCP caller that sent the token only that user
// can read.
func isOwner(c broker.Caller) bool {
	return c.Owner
}

func (s *server) stopDaemon(w http.ResponseWriter, r *http.Request) error {
	if err := s.checkControl(r, "stop the daemon"); err != nil {
		return err
	}
	force, err := boolQuery(r, wire.QueryForce, "stop the daemon")
	if err != nil {
		return err
	}
	stop := s.daemon.Stop
	if force {
		stop = s.daemon.StopNow
	}
	if stop == nil {
		return noControl("stop the daemon")
	}
	s.log.Info("stop requested through the API", "force", force)
	w.WriteHeader(http.StatusNoContent)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	// Shutdown drains this request too; it has answered, so it ends now.
	stop()
	return nil
}

func (s *server) reloadDaemon(w http.ResponseWriter, r *http.Request) error {
	if err := s.checkControl(r, "reload the config"); err != nil {
		return err
	}
	if s.daemon.Reload == nil {
		return noControl("reload the config")
	}
	res, err := s.daemon.Reload(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// checkControl admits admins to a daemon control route.
func (s *server) checkControl(r *http.Request, what string) error {
	if c, _ := callerFrom(r.Context()); !c.Rights.Admin() {
		return &broker.Error{Kind: broker.KindForbidden, Op: what, Msg: "only an admin may " + what}
	}
	if s.daemon == nil {
		return noControl(what)
	}
	return nil
}

func noControl(what string) error {
	return &broker.Error{Kind: broker.KindUnavailable, Op: what,
		Msg: "this server cannot " + what, Hint: "it is not a daemon started by `mcpx serve`"}
}
