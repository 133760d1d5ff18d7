package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// Confined watches the confined children of a test for what could outlive
// them: the cgroups the sandbox makes for each (<dir>/mcpx-<pid>, in the
// memory and pids cgroup directories it probed), and the network
// namespace a socket of the daemon's can hold (the egress listener on the
// child's own loopback). Make it before the daemon, so that its check runs
// after the daemon's cleanups; Note each confined child while it runs.
//
//	w := testenv.WatchConfined(t, k.Memory.Dir, k.Pids.Dir)
//	b := newBroker(t) // its Close a cleanup
//	w.Note(pid)
//
// It holds each child's network namespace open from Note to the check: the
// kernel gives a freed namespace's inode number to the next one made, so a
// name ("net:[N]") read once and compared later could be another child's
// namespace — another test's, in a package whose tests run in parallel.
type Confined struct {
	mu    sync.Mutex
	dirs  []string
	netns map[int]heldNS // pid -> its namespace
}

// heldNS is a network namespace, named and held open.
type heldNS struct {
	name string // "net:[N]"
	f    *os.File
}

// WatchConfined starts watching; cgroupDirs are where the sandbox makes
// its children's cgroups ("" ignored).
func WatchConfined(t testing.TB, cgroupDirs ...string) *Confined {
	c := &Confined{netns: map[int]heldNS{}}
	for _, d := range cgroupDirs {
		if d != "" {
			c.dirs = append(c.dirs, d)
		}
	}
	t.Cleanup(func() { c.check(t) })
	return c
}

// Note records pid, a running confined child, and its network namespace.
func (c *Confined) Note(pid int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, seen := c.netns[pid]; seen && h.f != nil {
		return
	}
	var h heldNS
	h.name, h.f, _ = HoldNetNS(pid)
	c.netns[pid] = h
}

// HoldNetNS opens pid's network namespace and names it as
// SocketNamespaces does ("net:[N]"). The name is the namespace's only as
// long as f stays open: once a namespace is freed, the kernel gives its
// inode number to the next one made.
func HoldNetNS(pid int) (name string, f *os.File, err error) {
	f, err = os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return "", nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return "", nil, err
	}
	return fmt.Sprintf("net:[%d]", st.Ino), f, nil
}

// Noted is how many children were noted.
func (c *Confined) Noted() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.netns)
}

func (c *Confined) check(t testing.TB) {
	c.mu.Lock()
	defer c.mu.Unlock()
	held := SocketNamespaces(t, os.Getpid())
	for pid, ns := range c.netns {
		for _, d := range c.dirs {
			if cg := filepath.Join(d, "mcpx-"+strconv.Itoa(pid)); exists(cg) {
				t.Errorf("the cgroup %s of the confined child %d outlives it", cg, pid)
			}
		}
		if ns.name != "" && held[ns.name] {
			t.Errorf("a socket of this process holds %s, the network namespace of the confined child %d", ns.name, pid)
		}
		if ns.f != nil {
			ns.f.Close()
		}
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// SocketNamespaces are the network namespaces ("net:[N]") of pid's
// sockets, read with pidfd_getfd and SIOCGSKNS (pid may be this process).
func SocketNamespaces(t testing.TB, pid int) map[string]bool {
	t.Helper()
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(pidfd)
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range ents {
		target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		n, err := strconv.Atoi(e.Name())
		if err != nil || !strings.HasPrefix(target, "socket:") {
			continue
		}
		fd, err := unix.PidfdGetfd(pidfd, n, 0)
		if err != nil {
			continue // closed since
		}
		if ns, err := unix.IoctlRetInt(fd, unix.SIOCGSKNS); err == nil {
			var st unix.Stat_t
			if unix.Fstat(ns, &st) == nil {
				out[fmt.Sprintf("net:[%d]", st.Ino)] = true
			}
			unix.Close(ns)
		}
		unix.Close(fd)
	}
	return out
}

// SocketsIn describes the sockets process pid holds in the network
// namespace ns (as SocketNamespaces names it: "net:[inode]"): each one's
// fd, type, whether it listens, and its local and peer addresses — what a
// test that finds a namespace held says about it.
func SocketsIn(t testing.TB, pid int, ns string) []string {
	t.Helper()
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return []string{fmt.Sprintf("pidfd_open %d: %v", pid, err)}
	}
	defer unix.Close(pidfd)
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	var out []string
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		if err != nil || !strings.HasPrefix(target, "socket:") {
			continue
		}
		fd, err := unix.PidfdGetfd(pidfd, n, 0)
		if err != nil {
			continue
		}
		if socketNS(fd) == ns {
			out = append(out, describeSocket(n, fd))
		}
		unix.Close(fd)
	}
	return out
}

// socketNS is the network namespace of the socket fd, "" if unknown.
func socketNS(fd int) string {
	ns, err := unix.IoctlRetInt(fd, unix.SIOCGSKNS)
	if err != nil {
		return ""
	}
	defer unix.Close(ns)
	var st unix.Stat_t
	if unix.Fstat(ns, &st) != nil {
		return ""
	}
	return fmt.Sprintf("net:[%d]", st.Ino)
}

// describeSocket is "fd 12: stream, listening, 127.0.0.1:3128 <- …".
func describeSocket(n, fd int) string {
	typ, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	listening, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
	kind := map[int]string{unix.SOCK_STREAM: "stream", unix.SOCK_DGRAM: "datagram", unix.SOCK_SEQPACKET: "seqpacket"}[typ]
	if listening == 1 {
		kind += ", listening"
	}
	local, peer := "?", "-"
	if sa, err := unix.Getsockname(fd); err == nil {
		local = sockaddr(sa)
	}
	if sa, err := unix.Getpeername(fd); err == nil {
		peer = sockaddr(sa)
	}
	return fmt.Sprintf("fd %d: %s, %s <-> %s", n, kind, local, peer)
}

func sockaddr(sa unix.Sockaddr) string {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return fmt.Sprintf("%d.%d.%d.%d:%d", a.Addr[0], a.Addr[1], a.Addr[2], a.Addr[3], a.Port)
	case *unix.SockaddrInet6:
		return fmt.Sprintf("[%x]:%d", a.Addr, a.Port)
	case *unix.SockaddrUnix:
		return "unix:" + a.Name
	}
	return fmt.Sprintf("%T", sa)
}
