package helper

import (
	"errors"
	"syscall"
	"unsafe"
)

// What package syscall does not name (this package imports nothing that
// would make it wait for os: package doc), from the kernel's uapi headers;
// the same on every architecture this package runs on.
const (
	sysLandlockCreateRuleset = 444
	sysLandlockAddRule       = 445
	sysLandlockRestrictSelf  = 446
	ruleNetPort              = 2 // LANDLOCK_RULE_NET_PORT
	rulePathBeneath          = 1 // LANDLOCK_RULE_PATH_BENEATH
	accessNetBindTCP         = 1 // LANDLOCK_ACCESS_NET_BIND_TCP

	prSetNoNewPrivs    = 38
	prSetSeccomp       = 22
	seccompModeFilter  = 2
	prCapAmbient       = 47
	prCapAmbientClear  = 4
	prCapbsetDrop      = 24
	prSetSecurebits    = 28
	capabilityVersion3 = 0x20080522

	siocGIFFlags = 0x8913
	siocSIFFlags = 0x8914
	iffUp        = 0x1

	oPath = 0x200000
)

func init() { Run() }

// Run turns this process into the helper when the daemon started it so,
// and then never returns: the helper confines itself and execs the child's
// program, or exits. Otherwise it returns at once. This package's init
// calls it; package sandbox's MaybeExec too.
func Run() {
	v, ok := syscall.Getenv(Env)
	if !ok {
		return
	}
	fd, ok := atoi(v)
	if !ok {
		msg := "mcpx sandbox helper: " + Env + "=" + v + " is no file descriptor\n"
		syscall.Write(2, []byte(msg))
		syscall.Exit(126)
	}
	syscall.Exit(run(fd))
}

func atoi(s string) (int, bool) {
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' || n > 1<<20 {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, s != ""
}

// run confines this process as the daemon's request on fd says and execs
// the program; it returns only if it could not. It runs on the main
// thread, to which the runtime locks the goroutine that runs the inits:
// Landlock, seccomp and no_new_privs are set on this thread only, and the
// exec from it is what carries them over.
func run(fd int) int {
	syscall.CloseOnExec(fd)
	req, err := readRequest(fd)
	if err != nil {
		return fail(fd, err.Error())
	}
	// Read first, as the C stage does: a helper that exits with the
	// request unread resets the socket, and the daemon would not read why.
	if _, ok := syscall.Getenv(EnvUnshare); ok {
		return fail(fd, "sandbox: the helper cannot make its namespaces: this executable has no C stage (built without cgo); was it replaced since the daemon started?")
	}
	rep := join(&req)
	rep, why := confine(fd, &req, rep)
	if why != "" {
		return fail(fd, why)
	}
	for _, f := range rep.Failures {
		for _, name := range f.Features {
			if contains(req.Fatal, name) {
				rep.Refused = true
			}
		}
	}
	if err := syscall.Sendmsg(fd, rep.Encode(), nil, nil, 0); err != nil || rep.Refused {
		return 126
	}
	err = syscall.Exec(req.Path, req.Args, req.Env)
	why = "sandbox: starting " + req.Path + ": " + err.Error()
	if err == syscall.EACCES {
		why += " (is it under the policy's read or write paths?)"
	}
	return fail(fd, why)
}

// join moves this process into the request's cgroups, writing "0" (the
// writer) to each one's file, as the C stage does. The daemon sends this
// helper none (it has threads: a tasks file would move one of them) and
// moves it itself; a test sends some. A move that fails is a Failure of
// its features.
func join(req *Request) (rep Report) {
	for _, j := range req.Join {
		if err := writeFile(j.File, "0"); err != nil && len(j.Features) > 0 {
			rep.Failures = append(rep.Failures, Failure{Features: j.Features, Why: wrap("moving into the cgroup "+j.File, err).Error()})
		}
	}
	return rep
}

// writeFile writes s to path.
func writeFile(path, s string) error {
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	n, err := syscall.Write(fd, []byte(s))
	if err == nil && n != len(s) {
		err = syscall.EIO
	}
	return err
}

// confine does the request's steps in order, after join's (rep): the
// network, no_new_privs, seccomp, Landlock, the rlimits, capabilities. A
// step that fails is a Failure of its features; why is for what must not
// be skipped.
func confine(fd int, req *Request, rep Report) (_ Report, why string) {
	check := func(features []string, err error) {
		if err != nil && len(features) > 0 {
			rep.Failures = append(rep.Failures, Failure{Features: features, Why: err.Error()})
		}
	}
	if req.LoopbackUp {
		check(req.Network, loopbackUp())
	}
	if req.ProxyPort != 0 {
		if err := sendListener(fd, req.ProxyPort); err != nil {
			return rep, "sandbox: listening on the child's 127.0.0.1:" + itoa(uint64(req.ProxyPort)) + " for the proxy: " + err.Error()
		}
	}
	if err := prctl(prSetNoNewPrivs, 1, 0); err != nil {
		return rep, "sandbox: prctl(PR_SET_NO_NEW_PRIVS): " + err.Error() // Landlock needs it
	}
	if len(req.Seccomp) > 0 {
		check(req.SeccompFeatures, InstallSeccomp(req.Seccomp))
	}
	if req.Landlock != nil {
		check(req.Landlock.Features, restrictLandlock(req.Landlock))
	}
	// Last: a low open-files limit must not fail the steps above, and
	// a limit above the daemon's may need the capabilities dropped next.
	for _, r := range req.Rlimits {
		check([]string{r.Feature}, syscall.Setrlimit(r.Resource, &syscall.Rlimit{Cur: r.Cur, Max: r.Max}))
	}
	check([]string{req.Capabilities}, dropCapabilities())
	return rep, ""
}

// wrap prefixes err's text with what failed.
type wrapped struct {
	what string
	err  error
}

func (w wrapped) Error() string { return w.what + ": " + w.err.Error() }
func (w wrapped) Unwrap() error { return w.err }

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return wrapped{what, err}
}

func prctl(option int, arg2, arg3 uintptr) error {
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, uintptr(option), arg2, arg3, 0, 0, 0); e != 0 {
		return e
	}
	return nil
}

// ifreqFlags is struct ifreq with its ifr_flags.
type ifreqFlags struct {
	name  [16]byte
	flags uint16
	_     [22]byte
}

// loopbackUp brings up lo in the helper's new network namespace, which
// starts with lo down and nothing else. The helper holds CAP_NET_ADMIN in
// its own user namespace, which owns the network namespace.
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return wrap("bringing lo up", err)
	}
	defer syscall.Close(fd)
	var ifr ifreqFlags
	copy(ifr.name[:], "lo")
	for _, req := range []uintptr{siocGIFFlags, siocSIFFlags} {
		if req == siocSIFFlags {
			ifr.flags |= iffUp
		}
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), req, uintptr(unsafe.Pointer(&ifr))); e != 0 {
			return wrap("bringing lo up", e)
		}
	}
	return nil
}

// sendListener makes the proxy's listener on this namespace's
// 127.0.0.1:port, with a plain TCP socket (not Multipath TCP), and sends
// it to the daemon; it keeps no copy.
func sendListener(fd int, port uint16) error {
	lfd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, syscall.IPPROTO_TCP)
	if err != nil {
		return err
	}
	defer syscall.Close(lfd)
	err = syscall.SetsockoptInt(lfd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	if err == nil {
		err = syscall.Bind(lfd, &syscall.SockaddrInet4{Port: int(port), Addr: [4]byte{127, 0, 0, 1}})
	}
	if err == nil {
		err = syscall.Listen(lfd, 128)
	}
	if err != nil {
		return err
	}
	return syscall.Sendmsg(fd, []byte{ReplyListener}, syscall.UnixRights(lfd), nil, 0)
}

// InstallSeccomp installs prog, the daemon's filter (8 bytes an
// instruction), which the program inherits.
func InstallSeccomp(prog []byte) error {
	if len(prog)%8 != 0 || len(prog)/8 > 4096 {
		return wrap("installing the seccomp filter", syscall.EINVAL)
	}
	filter := make([]syscall.SockFilter, len(prog)/8)
	for i := range filter {
		b := prog[8*i:]
		filter[i] = syscall.SockFilter{
			Code: uint16(b[0]) | uint16(b[1])<<8, Jt: b[2], Jf: b[3],
			K: uint32(b[4]) | uint32(b[5])<<8 | uint32(b[6])<<16 | uint32(b[7])<<24,
		}
	}
	fprog := syscall.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	return wrap("installing the seccomp filter", prctl(prSetSeccomp, seccompModeFilter, uintptr(unsafe.Pointer(&fprog))))
}

// rulesetAttr is struct landlock_ruleset_attr.
type rulesetAttr struct{ fs, net, scoped uint64 }

// pathBeneathAttr is struct landlock_path_beneath_attr (packed: the kernel
// reads its first 12 bytes).
type pathBeneathAttr struct {
	allowedAccess uint64
	parentFD      int32
}

// netPortAttr is struct landlock_net_port_attr.
type netPortAttr struct {
	allowedAccess uint64
	port          uint64
}

// restrictLandlock confines this thread, and the program it execs, to l.
func restrictLandlock(l *Ruleset) error {
	attr := rulesetAttr{l.FS, l.Net, l.Scoped}
	r0, _, e := syscall.Syscall(sysLandlockCreateRuleset, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		return wrap("landlock_create_ruleset", e)
	}
	fd := int(r0)
	defer syscall.Close(fd)
	for _, p := range l.Paths {
		if err := addPathRule(fd, p); err != nil {
			return err
		}
	}
	for _, p := range l.Ports {
		what := "landlock: connect to TCP port " + itoa(p.Port)
		if p.Access == accessNetBindTCP {
			what = "landlock: bind to TCP port " + itoa(p.Port)
		}
		if err := addRule(fd, ruleNetPort, unsafe.Pointer(&netPortAttr{p.Access, p.Port})); err != nil {
			return wrap(what, err)
		}
	}
	if _, _, e := syscall.Syscall(sysLandlockRestrictSelf, uintptr(fd), 0, 0); e != 0 {
		return wrap("landlock_restrict_self", e)
	}
	return nil
}

// addPathRule adds the rule for one of the policy's paths: directory
// rights for a directory, file rights for anything else.
func addPathRule(ruleset int, p PathRule) error {
	fd, err := syscall.Open(p.Path, oPath|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return wrap("landlock: "+p.Path, err)
	}
	access := p.File
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		access = p.Dir
	}
	attr := pathBeneathAttr{access, int32(fd)}
	return wrap("landlock: "+p.Path, addRule(ruleset, rulePathBeneath, unsafe.Pointer(&attr)))
}

func addRule(ruleset, typ int, attr unsafe.Pointer) error {
	if _, _, e := syscall.Syscall6(sysLandlockAddRule, uintptr(ruleset), uintptr(typ), uintptr(attr), 0, 0, 0); e != 0 {
		return e
	}
	return nil
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
	hdr := capHeader{version: capabilityVersion3}
	var data [2]capData
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return wrap("capget", e)
	}
	if data[0].permitted == 0 && data[1].permitted == 0 {
		return nil
	}
	if err := prctl(prCapAmbient, prCapAmbientClear, 0); err != nil {
		return wrap("clearing ambient capabilities", err)
	}
	for c := 0; ; c++ {
		err := prctl(prCapbsetDrop, uintptr(c), 0)
		if err == syscall.EINVAL {
			break // past the kernel's last capability
		}
		if err != nil {
			return wrap("dropping capability "+itoa(uint64(c))+" from the bounding set", err)
		}
	}
	bits := secbitNoRoot | secbitNoRootLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLockd
	if err := prctl(prSetSecurebits, uintptr(bits), 0); err != nil {
		return wrap("setting securebits", err)
	}
	data[0].inheritable, data[1].inheritable = 0, 0
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return wrap("clearing inheritable capabilities", e)
	}
	return nil
}

// capHeader and capData are struct __user_cap_header_struct and
// __user_cap_data_struct.
type capHeader struct {
	version uint32
	pid     int32
}

type capData struct{ effective, permitted, inheritable uint32 }

func readRequest(fd int) (Request, error) {
	// Peek first: MSG_TRUNC makes it return the message's whole length.
	n, _, _, _, err := syscall.Recvmsg(fd, nil, nil, syscall.MSG_PEEK|syscall.MSG_TRUNC)
	if err != nil {
		return Request{}, wrap("sandbox: reading the policy", err)
	}
	buf := make([]byte, min(max(n, 1), MaxRequest))
	n, _, flags, _, err := syscall.Recvmsg(fd, buf, nil, 0)
	switch {
	case err != nil:
		return Request{}, wrap("sandbox: reading the policy", err)
	case n == 0:
		return Request{}, errors.New("sandbox: the daemon closed before sending the policy")
	case flags&syscall.MSG_TRUNC != 0:
		return Request{}, errors.New("sandbox: the policy was cut short")
	}
	return DecodeRequest(buf[:n])
}

func fail(fd int, why string) int {
	syscall.Sendmsg(fd, append([]byte{ReplyError}, why...), nil, nil, 0)
	return 126
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}
