package proc

import (
	"os/exec"
	"syscall"
)

// setDeathSignal ties cmd to the spawner's thread, unless a watchdog
// runs: it kills the children of a dead daemon, and, unlike the signal,
// lets them outlive an exec of the daemon (see Watched).
func setDeathSignal(cmd *exec.Cmd) {
	if !watchdogUp.Load() {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
}
