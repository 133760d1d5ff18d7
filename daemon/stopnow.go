package daemon

// StopNow is a forced stop (api.Daemon.StopNow, `mcpx daemon stop
// --force`): every child is stopped at once — SIGTERM then SIGKILL, no
// drain — so the calls in flight fail at once and the listeners' drain
// has nothing to wait for; then the shutdown begins as Stop's.
func (ctl *Control) StopNow() {
	ctl.log.Warn("forced stop requested: stopping every child without draining")
	ctl.b.KillAll()
	ctl.Stop()
}
