package sandbox

import (
	"errors"

	"golang.org/x/sys/unix"
	"mcpx.dev/mcpx/pool/proc/sandbox/internal/helper"
)

// Landlock through x/sys/unix's system calls, not go-landlock: its
// all-thread restriction links libcap's psx, which hooks every thread the
// binary creates and costs every daemon ~10 MB (package doc, "Cost"); the
// helper restricts its one thread.

// landlockRights are the access rights a ruleset handles, as in struct
// landlock_ruleset_attr.
type landlockRights struct{ fs, net, scoped uint64 }

// landlockAdded are the rights each Landlock ABI added
// (Documentation/userspace-api/landlock.rst, "Previous limitations";
// ABIs 7, 8 and 11 added only flags, which this package does not use).
var landlockAdded = []landlockRights{
	1:  {fs: fsRead | fsWrite&^unix.LANDLOCK_ACCESS_FS_TRUNCATE},
	2:  {fs: unix.LANDLOCK_ACCESS_FS_REFER},
	3:  {fs: unix.LANDLOCK_ACCESS_FS_TRUNCATE},
	4:  {net: unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP},
	5:  {fs: unix.LANDLOCK_ACCESS_FS_IOCTL_DEV},
	6:  {scoped: unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL},
	7:  {},
	8:  {},
	9:  {fs: unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX},
	10: {net: unix.LANDLOCK_ACCESS_NET_BIND_UDP | unix.LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP},
	11: {},
}

// Rights granted on a rule's path. File rules get only fsFile: the kernel
// refuses directory rights on anything but a directory.
const (
	fsRead  = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	fsWrite = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_CHAR |
		unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_MAKE_SYM |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE
	fsFile = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE
)

// handledRights is what a ruleset handles at abi (an ABI newer than the
// table counts as the newest it knows): every filesystem right and scope,
// and the TCP rights if tcp. UDP is never handled.
func handledRights(abi int, tcp bool) landlockRights {
	var r landlockRights
	for _, a := range landlockAdded[:min(max(abi, 0), len(landlockAdded)-1)+1] {
		r.fs, r.net, r.scoped = r.fs|a.fs, r.net|a.net, r.scoped|a.scoped
	}
	r.net &= unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	if !tcp {
		r.net = 0
	}
	return r
}

// pathRights are the rights a rule grants a path under handled: read, or
// read and write (and refer, to move files within and between write
// directories); on anything but a directory, only the file rights.
func pathRights(handled uint64, dir, write bool) uint64 {
	a := uint64(fsRead)
	if write {
		a |= fsWrite | unix.LANDLOCK_ACCESS_FS_REFER
	}
	if !dir {
		a &= fsFile
	}
	return a & handled
}

// landlockRuleset is the ruleset that confines the helper's thread, and
// the program it execs, to p's paths (and under NetworkLoopback, if tcp,
// its TCP ports), and scopes its signals and abstract unix sockets to its
// own domain, with what ABI abi offers (Plan has decided whether that is
// enough). Whether a path is a directory the helper finds when it opens
// it: each rule carries the rights for either.
func landlockRuleset(p *Policy, abi int, tcp bool) (*helper.Ruleset, error) {
	h := handledRights(abi, tcp)
	if h.fs == 0 && h.net == 0 && h.scoped == 0 {
		return nil, errors.New("landlock: the kernel restricts nothing")
	}
	r := &helper.Ruleset{FS: h.fs, Net: h.net, Scoped: h.scoped}
	for _, list := range []struct {
		paths []string
		write bool
	}{{p.Read, false}, {p.Write, true}} {
		for _, path := range list.paths {
			r.Paths = append(r.Paths, helper.PathRule{Path: path, Dir: pathRights(h.fs, true, list.write), File: pathRights(h.fs, false, list.write)})
		}
	}
	if h.net != 0 {
		for _, port := range p.ConnectTCP {
			r.Ports = append(r.Ports, helper.PortRule{Access: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, Port: uint64(port)})
		}
		for _, port := range p.BindTCP {
			r.Ports = append(r.Ports, helper.PortRule{Access: unix.LANDLOCK_ACCESS_NET_BIND_TCP, Port: uint64(port)})
		}
	}
	return r, nil
}

// landlockVersion asks the kernel for its Landlock ABI version, or, with
// unix.LANDLOCK_CREATE_RULESET_ERRATA, for its errata fixed.
func landlockVersion(flag uintptr) (int, error) {
	r0, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, flag)
	if e != 0 {
		return 0, e
	}
	return int(r0), nil
}
