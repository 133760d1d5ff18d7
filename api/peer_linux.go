package api

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// peerCred returns the uid and pid of the process at the other end of c, as
// the kernel recorded them at connect (SO_PEERCRED, unix(7)).
func peerCred(c *net.UnixConn) (uid, pid int, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, 0, err
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
		return 0, 0, err
	}
	return int(cred.Uid), int(cred.Pid), nil
}

// otherUserNS reports whether process pid lives in another user namespace
// than this one (user_namespaces(7): /proc/<pid>/ns/user names it; two
// links name the same namespace when they are the same nsfs inode). The
// pid is read at accept, while the peer waits for its answer, so the
// window in which it could exit and its pid be reused is short; a pid
// that cannot be read is an error, and the caller is refused.
func otherUserNS(pid int) (bool, error) {
	self, err := os.Stat("/proc/self/ns/user")
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // a kernel without user namespaces: all share one
	}
	if err != nil {
		return false, err
	}
	if pid <= 0 {
		// SO_PEERCRED gives 0 for a process outside our pid namespace
		// and its descendants: nothing to check it by.
		return false, fmt.Errorf("the connecting process is outside the daemon's pid namespace")
	}
	theirs, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/ns/user")
	if err != nil {
		return false, err
	}
	return !os.SameFile(self, theirs), nil
}

// parentOf returns the parent pid of pid from /proc/<pid>/stat (proc(5)):
// "pid (comm) state ppid ...", where comm may hold spaces and parentheses,
// so the fields are counted from the last ')'.
func parentOf(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	return strconv.Atoi(string(f[1]))
}
