package sandbox

import (
	"encoding/binary"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
	"mcpx.dev/mcpx/pool/proc/sandbox/internal/helper"
)

// auditArch is this architecture's AUDIT_ARCH, as seccomp reports it.
var auditArch = map[string]uint32{
	"amd64":   unix.AUDIT_ARCH_X86_64,
	"arm64":   unix.AUDIT_ARCH_AARCH64,
	"riscv64": unix.AUDIT_ARCH_RISCV64,
}

// seccompProgram is the helper's seccomp filter, which the program
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
func seccompProgram(noUnix, noMPTCP bool) ([]unix.SockFilter, error) {
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		return nil, fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
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
	return assemble([]insn{
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
}

// encodeFilter is prog as the helper reads it: struct sock_filter's bytes.
func encodeFilter(prog []unix.SockFilter) []byte {
	b := make([]byte, 0, 8*len(prog))
	for _, in := range prog {
		b = binary.LittleEndian.AppendUint16(b, in.Code)
		b = append(b, in.Jt, in.Jf)
		b = binary.LittleEndian.AppendUint32(b, in.K)
	}
	return b
}

// installSeccomp installs, on this thread, the filter seccompProgram makes,
// as the helper does (for BenchmarkSeccompSyscall).
func installSeccomp(noUnix, noMPTCP bool) error {
	prog, err := seccompProgram(noUnix, noMPTCP)
	if err != nil {
		return err
	}
	return helper.InstallSeccomp(encodeFilter(prog))
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
