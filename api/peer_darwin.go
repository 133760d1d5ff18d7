package api

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerCred returns the uid (LOCAL_PEERCRED, unix(4)) and pid
// (LOCAL_PEERPID) of the process at the other end of c.
func peerCred(c *net.UnixConn) (uid, pid int, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cred *unix.Xucred
	var serr error
	err = raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		if serr == nil {
			pid, serr = unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID)
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return 0, 0, err
	}
	return int(cred.Uid), pid, nil
}

// otherUserNS is false: macOS has no user namespaces.
func otherUserNS(pid int) (bool, error) { return false, nil }

// parentOf returns the parent pid of pid (sysctl kern.proc.pid).
func parentOf(pid int) (int, error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return 0, err
	}
	return int(kp.Eproc.Ppid), nil
}
