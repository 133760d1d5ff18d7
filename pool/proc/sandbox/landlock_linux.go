package sandbox

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock through x/sys/unix's system calls, not go-landlock: its
// all-thread restriction links libcap's psx, which hooks every thread the
// binary creates and costs every daemon ~10 MB (package doc, "Cost"); the
// helper restricts its one thread.

// What x/sys/unix does not name, from include/uapi/linux/landlock.h.
const ruleNetPort = 2 // LANDLOCK_RULE_NET_PORT

// netPortAttr is struct landlock_net_port_attr.
type netPortAttr struct {
	allowedAccess uint64
	port          uint64
}

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

// restrictLandlock confines this thread, and the program it execs, to p's
// paths (and under NetworkLoopback its TCP ports), and scopes its signals
// and abstract unix sockets to its own domain, with what ABI s.Landlock
// offers (Plan has decided whether that is enough). It restricts this
// thread only: the helper execs from it, and an exec leaves no other
// thread.
func restrictLandlock(p *Policy, s setup) error {
	h := handledRights(s.Landlock, s.LandlockTCP)
	if h.fs == 0 && h.net == 0 && h.scoped == 0 {
		return errors.New("landlock: the kernel restricts nothing")
	}
	attr := unix.LandlockRulesetAttr{Handled_access_fs: h.fs, Handled_access_net: h.net, Scoped: h.scoped}
	r0, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", e)
	}
	fd := int(r0)
	defer unix.Close(fd)
	for _, path := range p.Read {
		if err := addPathRule(fd, path, h.fs, false); err != nil {
			return err
		}
	}
	for _, path := range p.Write {
		if err := addPathRule(fd, path, h.fs, true); err != nil {
			return err
		}
	}
	if h.net != 0 {
		for _, port := range p.ConnectTCP {
			if err := addRule(fd, ruleNetPort, unsafe.Pointer(&netPortAttr{unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, uint64(port)})); err != nil {
				return fmt.Errorf("landlock: connect to TCP port %d: %w", port, err)
			}
		}
		for _, port := range p.BindTCP {
			if err := addRule(fd, ruleNetPort, unsafe.Pointer(&netPortAttr{unix.LANDLOCK_ACCESS_NET_BIND_TCP, uint64(port)})); err != nil {
				return fmt.Errorf("landlock: bind to TCP port %d: %w", port, err)
			}
		}
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0); e != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", e)
	}
	return nil
}

// addPathRule adds the rule for one of the policy's paths: directory
// rights for a directory, file rights for anything else. A path that
// cannot be opened allows nothing, so it needs no rule.
func addPathRule(ruleset int, path string, handled uint64, write bool) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("landlock: %s: %w", path, err)
	}
	dir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	attr := unix.LandlockPathBeneathAttr{Allowed_access: pathRights(handled, dir, write), Parent_fd: int32(fd)}
	if err := addRule(ruleset, unix.LANDLOCK_RULE_PATH_BENEATH, unsafe.Pointer(&attr)); err != nil {
		return fmt.Errorf("landlock: %s: %w", path, err)
	}
	return nil
}

func addRule(ruleset, typ int, attr unsafe.Pointer) error {
	if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), uintptr(typ), uintptr(attr), 0, 0, 0); e != 0 {
		return e
	}
	return nil
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
