package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// loopbackUp brings up lo in the helper's new network namespace, which
// starts with lo down and nothing else. The helper holds CAP_NET_ADMIN in
// its own user namespace, which owns the network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	return nil
}

// loopbackListener listens on 127.0.0.1:port with a plain TCP socket
// (not Multipath TCP, Go's default for net.Listen).
func loopbackListener(port uint16) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return -1, err
	}
	err = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err == nil {
		err = unix.Bind(fd, &unix.SockaddrInet4{Port: int(port), Addr: [4]byte{127, 0, 0, 1}})
	}
	if err == nil {
		err = unix.Listen(fd, 128)
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// Secure bits (linux/securebits.h), which x/sys/unix does not name.
const (
	secbitNoRoot                 = 1 << 0
	secbitNoRootLocked           = 1 << 1
	secbitNoCapAmbientRaise      = 1 << 6
	secbitNoCapAmbientRaiseLockd = 1 << 7
)

// dropCapabilities makes sure the program holds no capability after exec,
// in its own user namespace or (without one, as root) in the host's: the
// bounding set emptied, ambient and inheritable sets cleared, and uid 0
// given nothing on exec (SECBIT_NOROOT, locked). Holding none already, it
// has nothing to do: no_new_privs keeps file capabilities from adding any.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	if data[0].Permitted == 0 && data[1].Permitted == 0 {
		return nil
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	for c := 0; ; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			break // past the kernel's last capability
		}
		if err != nil {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	bits := secbitNoRoot | secbitNoRootLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLockd
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, uintptr(bits), 0, 0, 0); err != nil {
		return fmt.Errorf("setting securebits: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clearing inheritable capabilities: %w", err)
	}
	return nil
}

// auditArch is this architecture's AUDIT_ARCH, as seccomp reports it.
var auditArch = map[string]uint32{
	"amd64":   unix.AUDIT_ARCH_X86_64,
	"arm64":   unix.AUDIT_ARCH_AARCH64,
	"riscv64": unix.AUDIT_ARCH_RISCV64,
}

// refuseMPTCP installs a seccomp filter that refuses Multipath TCP
// sockets, which Landlock's TCP port rules do not cover (a confined child
// could otherwise connect to any port by asking for IPPROTO_MPTCP), and
// io_uring, whose socket operations a socket() filter cannot see. Go's
// net package falls back to plain TCP on EPROTONOSUPPORT. System calls of
// another ABI than the native one (i386 and x32 on amd64) are refused
// whole: their socketcall hides its arguments from the filter.
func refuseMPTCP() error {
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("no seccomp filter against Multipath TCP for %s", runtime.GOARCH)
	}
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
		// Offsets in struct seccomp_data: nr, arch, args[2] (its low half).
		nr, archOff, arg2 = 0, 4, 16 + 2*8
	)
	x32 := unix.SockFilter{Code: jeq, K: 0} // a jump to the next instruction either way
	if runtime.GOARCH == "amd64" {
		x32 = unix.SockFilter{Code: jge, Jt: 6, K: 0x40000000} // __X32_SYSCALL_BIT
	}
	prog := []unix.SockFilter{
		{Code: ld, K: archOff},
		{Code: jeq, Jf: 8, K: arch},
		{Code: ld, K: nr},
		x32,
		{Code: jeq, Jt: 5, K: unix.SYS_IO_URING_SETUP},
		{Code: jeq, Jf: 2, K: unix.SYS_SOCKET},
		{Code: ld, K: arg2},
		{Code: jeq, Jt: 1, K: unix.IPPROTO_MPTCP},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPROTONOSUPPORT)},
		{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("installing the seccomp filter against Multipath TCP: %w", err)
	}
	runtime.KeepAlive(prog)
	return nil
}

// restrictLandlock confines this thread, and the program it execs, to p's
// paths (and under NetworkLoopback its TCP ports), and scopes its signals
// and abstract unix sockets to its own domain. It uses what the kernel
// offers up to the newest ABI go-landlock knows (Plan has decided whether
// that is enough). It restricts this thread only: the helper execs from
// it, and an exec leaves no other thread.
func restrictLandlock(p *Policy, s setup) error {
	cfg := landlock.Config{HandledAccessFS: landlock.V11.HandledAccessFS, Scoped: landlock.V11.Scoped}
	if s.LandlockTCP {
		cfg.HandledAccessNet = ll.AccessNetBindTCP | ll.AccessNetConnectTCP
	}
	var rules []landlock.Rule
	for _, path := range p.Read {
		if r, ok := pathRule(path, false, s.Landlock); ok {
			rules = append(rules, r)
		}
	}
	for _, path := range p.Write {
		if r, ok := pathRule(path, true, s.Landlock); ok {
			rules = append(rules, r)
		}
	}
	if s.LandlockTCP {
		for _, port := range p.ConnectTCP {
			rules = append(rules, landlock.ConnectTCP(port))
		}
		for _, port := range p.BindTCP {
			rules = append(rules, landlock.BindTCP(port))
		}
	}
	fd, flags, err := cfg.BestEffort().NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if fd < 0 {
		return errors.New("landlock: the kernel restricts nothing")
	}
	defer unix.Close(fd)
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}

// pathRule is the Landlock rule for one of the policy's paths: directory
// rights for a directory, file rights for anything else. A missing path
// allows nothing, so it needs no rule.
func pathRule(path string, write bool, abi int) (landlock.Rule, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, false
	}
	switch {
	case fi.IsDir() && write:
		r := landlock.RWDirs(path)
		if abi >= 2 {
			r = r.WithRefer()
		}
		return r, true
	case fi.IsDir():
		return landlock.RODirs(path), true
	case write:
		return landlock.RWFiles(path), true
	default:
		return landlock.ROFiles(path), true
	}
}
