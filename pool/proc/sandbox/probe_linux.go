package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

func probe() Kernel {
	k := Kernel{OS: runtime.GOOS, Root: os.Geteuid() == 0}
	k.Landlock, k.LandlockWhy = landlockABI()
	k.Namespaces, k.NamespacesWhy = probeNamespaces()
	k.Memory, k.Pids, k.CgroupWhy = probeCgroups(cgroupFS{})
	return k
}

// landlockABI asks the kernel for its Landlock ABI, as go-landlock does
// (Documentation/userspace-api/landlock.rst, "Landlock errata"): an ABI
// from 6 on whose signal-scoping erratum is not fixed counts as 5.
func landlockABI() (int, string) {
	v, err := landlockVersion(unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case errors.Is(err, syscall.ENOSYS):
		return 0, "the kernel was built without Landlock (CONFIG_SECURITY_LANDLOCK)"
	case errors.Is(err, syscall.EOPNOTSUPP):
		return 0, "Landlock is not enabled at boot (add landlock to the lsm= kernel parameter)"
	case err != nil:
		return 0, fmt.Sprintf("landlock_create_ruleset: %v", err)
	}
	if v >= 6 {
		if errata, err := landlockVersion(unix.LANDLOCK_CREATE_RULESET_ERRATA); err != nil || errata&0x2 == 0 {
			return 5, fmt.Sprintf("Landlock ABI %d without the signal-scoping fix (erratum 2) counts as 5", v)
		}
	}
	return v, ""
}

// probeNamespaces starts a process in new user, IPC and network namespaces that
// fails to exec a missing file: ENOENT from the exec means the clone and the
// id maps worked, anything else names why they did not.
func probeNamespaces() (bool, string) {
	cmd := exec.Command("/nonexistent/mcpx-sandbox-probe")
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	setNamespaces(cmd.SysProcAttr, true)
	err := cmd.Start()
	if err == nil {
		cmd.Process.Kill()
		cmd.Wait()
		return false, "the namespace probe unexpectedly started a program"
	}
	if errors.Is(err, syscall.ENOENT) {
		return true, ""
	}
	why := fmt.Sprintf("a user namespace with a network namespace cannot be made (%v)", err)
	if b, _ := os.ReadFile("/proc/sys/user/max_user_namespaces"); string(b) == "0\n" {
		why += ": user.max_user_namespaces is 0"
	} else if b, _ := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); string(b) == "0\n" {
		why += ": kernel.unprivileged_userns_clone is 0"
	}
	return false, why
}

// setNamespaces makes a process start in a user namespace of its own, in
// which it keeps the daemon's own uid and gid, mapped to themselves and
// nothing else, with an IPC namespace of its own (no System V IPC or POSIX
// message queue of the daemon's user) and, if net, a network namespace.
func setNamespaces(a *syscall.SysProcAttr, net bool) {
	a.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWIPC
	if net {
		a.Cloneflags |= syscall.CLONE_NEWNET
	}
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
	a.GidMappingsEnableSetgroups = false
}
