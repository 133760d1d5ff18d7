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

// otherUserNS reports whether process pid lives in a user namespace
// below the daemon's: one created by the daemon's uid under it, as
// package pool/proc/sandbox creates one for each confined child
// (user_namespaces(7): /proc/<pid>/ns/user names it; two links name the
// same namespace when they are the same nsfs inode; ioctl_nsfs(2):
// NS_GET_PARENT walks up, and fails with EPERM above the caller's own).
//
// A process in a namespace above the daemon's, or beside it, is not below
// it: the daemon of a systemd unit with PrivateUsers=yes lives in a
// namespace of its own, and the user's shell, outside, is its owner. Such
// a process's link cannot even be read (EACCES: the daemon has no ptrace
// rights over it), which a process below cannot arrange — the daemon's uid
// owns every namespace below its own and holds every capability in it, so
// it may read them all. The pid is read at accept, while the peer waits
// for its answer, so the window in which it could exit and its pid be
// reused is short; any other error refuses the caller.
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
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/user")
	if errors.Is(err, fs.ErrPermission) {
		return false, nil // not below ours: see above
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	cur := f
	defer func() {
		if cur != f {
			cur.Close()
		}
	}()
	for range maxUserNSDepth + 1 {
		fi, err := cur.Stat()
		if err != nil {
			return false, err
		}
		if os.SameFile(self, fi) {
			return cur != f, nil // ours, or reached from below
		}
		parent, err := unix.IoctlRetInt(int(cur.Fd()), nsGetParent)
		if err == unix.EPERM {
			return false, nil // the walk left the daemon's: above or beside it
		}
		if err != nil {
			return false, fmt.Errorf("the user namespace of pid %d: %w", pid, err)
		}
		if cur != f {
			cur.Close()
		}
		cur = os.NewFile(uintptr(parent), "parent user namespace")
	}
	return false, fmt.Errorf("the user namespace of pid %d is nested deeper than the kernel allows", pid)
}

// nsGetParent is ioctl_nsfs(2)'s NS_GET_PARENT, _IO(0xb7, 0x2) in
// <linux/nsfs.h> (x/sys/unix does not define it); maxUserNSDepth the
// kernel's bound on user namespace nesting (user_namespaces(7): 32).
const (
	nsGetParent    = 0xb702
	maxUserNSDepth = 32
)

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
