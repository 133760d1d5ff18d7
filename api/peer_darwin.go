package api

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerCred returns the uid of the process at the other end of c
// (LOCAL_PEERCRED, unix(4)).
func peerCred(c *net.UnixConn) (uid int, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Xucred
	var serr error
	err = raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return 0, err
	}
	return int(cred.Uid), nil
}
