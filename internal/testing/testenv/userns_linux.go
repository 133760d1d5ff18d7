package testenv

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// UserNamespaces skips t (fails it with MCPX_REQUIRE_DEPS=1) unless this
// user may make a user namespace with a mount namespace, as a systemd user
// manager does for a unit's sandboxing options (PrivateUsers=).
func UserNamespaces(t testing.TB) {
	t.Helper()
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
	}
	if err := cmd.Run(); err != nil {
		missing(t, "unprivileged user namespaces ("+err.Error()+")", "sysctl -w kernel.unprivileged_userns_clone=1 (or user.max_user_namespaces > 0)")
	}
}
