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

// probeNamespaces finds how this machine starts a child in new user,
// IPC and network namespaces: through util-linux's unshare (unshareStage),
// else by clone flags; it starts a process so, that fails to exec a
// missing file: ENOENT from the exec means the namespaces and the id maps
// worked, anything else names why they did not.
func probeNamespaces() (bool, string) {
	if stage, err := probeUnshare(); err == nil {
		nsStage = stage
		return true, ""
	}
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

// nsStage is the unshare program a confined child's helper is started
// through, "" where there is none that does what unshareArgs asks (then
// the helper is cloned into its namespaces). Set once, by probe.
var nsStage string

// unsharePaths are where util-linux installs unshare (Debian and Ubuntu
// mark util-linux essential; Fedora, Arch and Alpine's util-linux have
// it too). Only these: not the daemon's PATH.
var unsharePaths = []string{"/usr/bin/unshare", "/bin/unshare"}

// probeUnshare returns an unshare that makes the namespaces as
// unshareArgs asks (util-linux 2.38 and later: --map-current-user), by
// running it on a missing file: its exit status 127 says it made them and
// failed only to exec.
func probeUnshare() (string, error) {
	for _, path := range unsharePaths {
		if _, err := os.Stat(path); err != nil {
			continue
		}
		cmd := exec.Command(path, unshareArgs(path, true, "/nonexistent/mcpx-sandbox-probe")[1:]...)
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 127 {
			return path, nil
		}
		return "", fmt.Errorf("%s: %v", path, err)
	}
	return "", errors.New("no unshare")
}

// unshareArgs is the argv that makes unshare (at path) enter new user and
// IPC namespaces (and, if net, a network namespace) with the daemon's uid
// and gid mapped to themselves and setgroups denied, as setNamespaces
// does, keep the capabilities it holds in them (ambient, which the
// helper needs for the loopback and clears before its exec), and exec
// exe in the same process.
func unshareArgs(path string, net bool, exe string) []string {
	args := []string{path, "--user", "--map-current-user", "--keep-caps", "--ipc"}
	if net {
		args = append(args, "--net")
	}
	return append(args, "--", exe)
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
	// Kept across the helper's exec, which would otherwise drop every
	// capability of a uid that is not 0, as unshare --keep-caps keeps
	// them: CAP_SETPCAP to drop the bounding set and lock the secure
	// bits, CAP_NET_ADMIN to bring lo up; the helper then clears them
	// all (helper.dropCapabilities).
	a.AmbientCaps = append(a.AmbientCaps, unix.CAP_SETPCAP)
	if net {
		a.AmbientCaps = append(a.AmbientCaps, unix.CAP_NET_ADMIN)
	}
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
	a.GidMappingsEnableSetgroups = false
}
