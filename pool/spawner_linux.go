package pool

import (
	"os/exec"
	"syscall"
)

func setDeathSignal(cmd *exec.Cmd) { cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL }
