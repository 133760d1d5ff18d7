package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

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

// installSeccomp installs the helper's seccomp filter, which the program
// inherits. It refuses what Landlock cannot see:
//
//   - noUnix: socket(2) for AF_UNIX (EACCES), so that below Landlock ABI 9
//     the child cannot connect to any pathname unix socket it can name;
//     socketpair(2) stays allowed;
//   - noMPTCP: Multipath TCP sockets (EPROTONOSUPPORT, on which Go's net
//     package falls back to TCP), which Landlock's TCP port rules do not
//     cover: a confined child could connect to any port by asking for
//     IPPROTO_MPTCP;
//   - always io_uring (ENOSYS), whose socket operations a socket(2) filter
//     cannot see, and system calls of another ABI than the native one
//     (i386 and x32 on amd64: their socketcall hides its arguments).
func installSeccomp(noUnix, noMPTCP bool) error {
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
	}
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
		// Offsets in struct seccomp_data: nr, arch, args[0], args[2] (low halves).
		nr, archOff, arg0, arg2 = 0, 4, 16, 16 + 2*8
	)
	unixTarget, mptcpTarget := "next", "allow"
	if noUnix {
		unixTarget = "eacces"
	}
	if noMPTCP {
		mptcpTarget = "eprotonosupport"
	}
	x32 := insn{code: jeq, k: 0} // a jump to the next instruction either way
	if runtime.GOARCH == "amd64" {
		x32 = insn{code: jge, k: 0x40000000, jt: "enosys"} // __X32_SYSCALL_BIT
	}
	prog, err := assemble([]insn{
		{code: ld, k: archOff},
		{code: jeq, k: arch, jf: "enosys"},
		{code: ld, k: nr},
		x32,
		{code: jeq, k: unix.SYS_IO_URING_SETUP, jt: "enosys"},
		{code: jeq, k: unix.SYS_SOCKET, jf: "allow"},
		{code: ld, k: arg0},
		{code: jeq, k: unix.AF_UNIX, jt: unixTarget},
		{code: ld, k: arg2},
		{code: jeq, k: unix.IPPROTO_MPTCP, jt: mptcpTarget, jf: "allow"},
		{label: "allow", code: ret, k: unix.SECCOMP_RET_ALLOW},
		{label: "eprotonosupport", code: ret, k: unix.SECCOMP_RET_ERRNO | uint32(unix.EPROTONOSUPPORT)},
		{label: "eacces", code: ret, k: unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)},
		{label: "enosys", code: ret, k: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
	})
	if err != nil {
		return err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("installing the seccomp filter: %w", err)
	}
	runtime.KeepAlive(prog)
	return nil
}

// insn is a classic BPF instruction whose jumps name labels ("" or
// "next": the next instruction).
type insn struct {
	label  string
	code   uint16
	k      uint32
	jt, jf string
}

// assemble resolves the labels of prog, which only jump forward.
func assemble(prog []insn) ([]unix.SockFilter, error) {
	at := map[string]int{}
	for i, in := range prog {
		if in.label != "" {
			at[in.label] = i
		}
	}
	off := func(i int, label string) (uint8, error) {
		if label == "" || label == "next" {
			return 0, nil
		}
		j, ok := at[label]
		if !ok || j <= i || j-i-1 > 255 {
			return 0, fmt.Errorf("seccomp filter: instruction %d cannot jump to %q", i, label)
		}
		return uint8(j - i - 1), nil
	}
	out := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		jt, err := off(i, in.jt)
		if err != nil {
			return nil, err
		}
		jf, err := off(i, in.jf)
		if err != nil {
			return nil, err
		}
		out[i] = unix.SockFilter{Code: in.code, Jt: jt, Jf: jf, K: in.k}
	}
	return out, nil
}
