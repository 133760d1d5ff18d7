package api

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerCred returns the uid of the process at the other end of c, as the
// kernel recorded it at connect (SO_PEERCRED, unix(7)).
func peerCred(c *net.UnixConn) (uid int, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var serr error
	err = raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return 0, err
	}
	return int(cred.Uid), nil
}
