// Package daemon is the parts of `mcpx serve` below its command line: the
// daemon's core (New: the state directory, the log, the supervisor of
// grandchildren, the nix resolver, the broker), the set of listeners that
// closes what it opened when a later step of the start fails, the control
// (reload on SIGHUP, POST /v1/daemon/reload or a change of the config
// file; stop on POST /v1/daemon/stop), the config watch, the daemon
// record and the upgrade in place. cmd/mcpx wires them into one run group
// (github.com/oklog/run):
//
//	cfg, src, err := daemon.LoadConfig(path, os.Getenv)
//	d, err := daemon.New(daemon.Options{Config: cfg, Source: src, StateDir: state, Version: v, Stderr: os.Stderr})
//	defer d.Close()
//	var lns daemon.Listeners
//	defer lns.Close()
//	tln, err := lns.Local(sock, "127.0.0.1:0", api.ServeOptions{Logger: d.Log}, api.DefaultMaxConns)
//	ctl := daemon.NewControl(d.Log, d.Broker, src, func() (*config.Config, daemon.Source, error) { return daemon.LoadConfig(path, os.Getenv) })
//	h := api.New(api.Options{Broker: d.Broker, Daemon: &api.Daemon{Config: ctl.Config, Stop: ctl.Stop, Reload: ctl.ReloadAPI}, …})
//	rec, err := daemon.PublishRecord(d.Log, daemon.Info(state, sock, tln, src, v), token)
//	ctl.AfterReload(rec.Rewrite) // the record names the config in force
//	defer rec.Remove()
//	up := daemon.NewUpgrader(d.Log, 1)
//	var g run.Group
//	for _, a := range append(lns.Actors(h), ctl.HangupActor(), ctl.StopActor(), ctl.WatchActor(src.Watched()), up.Actor(&lns)) {
//		g.Add(a.Execute, a.Interrupt)
//	}
//	err = up.AfterRun(g.Run(), d, &lns, rec, nil) // an upgrade re-executes the daemon: it returns only if that failed
//
// The tailnet node (package tsnet) is not here: cmd/mcpx brings it up and
// adds its listeners to the set, so this package builds without
// tailscale.com.
//
// # The daemon record
//
// daemon.json in the state directory (wire.DaemonRecord: pid, version,
// socket, TCP address and URL, token, config, start time) and the token
// alone in the token file, both 0600 and replaced atomically, are how
// clients find the daemon and its token (paths.ReadRecord). A record of
// another daemon that still serves is never replaced; a dead daemon's is
// (paths.Alive: a zombie is dead). A reload rewrites it to name the
// config in force. The record is removed at a clean shutdown.
package daemon
