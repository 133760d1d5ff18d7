//go:build !linux

package proc

import "os/exec"

// setDeathSignal does nothing where there is no parent-death signal; there
// children outlive a daemon that is killed without Close.
func setDeathSignal(*exec.Cmd) {}
