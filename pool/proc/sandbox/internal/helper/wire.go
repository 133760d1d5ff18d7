// Package helper is the sandbox's helper: the process a confined child
// starts as, which confines itself as the daemon's Request says and execs
// the child's program. It runs in this package's init, when the variable
// Env names the file descriptor of its socket to the daemon: before the
// init of every package that is not among its own few imports (syscall,
// unsafe, errors), since Go initializes packages in the order of their
// import paths among those whose imports are done (the Go spec, "Package
// initialization"), and nothing of this package needs os, fmt, reflect or
// encoding/json (nor x/sys/unix, which waits for reflect: by then os and
// fmt are done, and every github.com/ package before it is ready). In the mcpx binary that skips some 400 packages' inits
// (package sandbox's doc, "Cost").
//
// Built with cgo, this package also has the C stage (cstage_linux.c): the
// same helper in C, run by an ELF constructor before the Go runtime
// starts, which saves the runtime's start and can make the namespaces
// itself (EnvUnshare). PreRuntime says which a binary has; the daemon,
// the same binary, starts the helper accordingly.
//
// The daemon (package sandbox) decides everything: the Request is a list
// of system calls' arguments, each step with the features it enforces; the
// helper reports the steps that failed and, if one of them was for a
// feature the daemon marked fatal (Enforce mode), does not exec.
package helper

import "errors"

// Env names the variable that makes a process the helper: its value is
// the number of the inherited file descriptor that carries the Request in
// and the replies out (a unix SOCK_SEQPACKET socket, one message each).
const Env = "MCPX_SANDBOX_HELPER"

// EnvUnshare asks the helper to make its namespaces itself, right after
// it has read the Request: new user and IPC namespaces ("ipc") and a
// network namespace too ("ipc,net"), with the daemon's uid and gid mapped
// to themselves. Only the C stage can (PreRuntime): unshare(2) of a user
// namespace needs a single-threaded process; the Go helper refuses it.
const EnvUnshare = "MCPX_SANDBOX_UNSHARE"

// EnvGoStage, set (to anything), makes the C stage step aside for the Go
// helper: for tests that run the Go helper in a binary built with cgo.
const EnvGoStage = "MCPX_SANDBOX_GO_STAGE"

// MaxRequest bounds the request. The kernel bounds a SOCK_SEQPACKET
// message by the socket's send buffer, some 200 KiB.
const MaxRequest = 1 << 20

// MaxReply bounds a reply.
const MaxReply = 64 << 10

// Request is what the daemon sends the helper, once. The helper moves
// itself into the cgroups of Join first, or the daemon has moved it.
type Request struct {
	// Path and Args are what the helper execs, Env its whole environment.
	Path      string
	Args, Env []string
	// LoopbackUp: bring up lo in the helper's own network namespace;
	// Network names its features.
	LoopbackUp bool
	Network    []string
	// ProxyPort, if not 0, is the port of the listener the helper makes on
	// its 127.0.0.1 and sends back.
	ProxyPort uint16
	// Seccomp is the filter to install (8 bytes an instruction, as struct
	// sock_filter), none if empty, and the features it enforces.
	Seccomp         []byte
	SeccompFeatures []string
	// Landlock, if not nil, is the ruleset to restrict with.
	Landlock *Ruleset
	// Rlimits are set in order, after Landlock.
	Rlimits []Rlimit
	// Capabilities names the feature of dropping every capability.
	Capabilities string
	// Fatal are the features whose failure refuses the exec.
	Fatal []string
	// Join are the cgroups the helper moves itself into, first of all.
	Join []Join
}

// Join is one cgroup the helper moves itself into, by writing "0" (the
// writer) to File, and the features its limits enforce.
//
// The C stage is single-threaded, and a cgroup v1's tasks file moves the
// writing thread alone: the kernel then skips the global lock a move of a
// whole process takes, and with it a wait for an RCU grace period, some
// 5 ms of a confined spawn's wall time on an idle machine (bench/README.md,
// "A cgroup the helper joins itself"). The daemon sends Join to the C
// stage only: the Go helper has threads, and the daemon moves it; and a
// child is cloned into its v2 cgroup, which has no tasks file.
type Join struct {
	File     string
	Features []string
}

// Ruleset is a Landlock ruleset: the rights it handles, its rules, and the
// features it enforces.
type Ruleset struct {
	FS, Net, Scoped uint64
	Paths           []PathRule
	Ports           []PortRule
	Features        []string
}

// PathRule allows Dir on Path if it is a directory, File if it is not. A
// path that cannot be opened allows nothing and gets no rule.
type PathRule struct {
	Path      string
	Dir, File uint64
}

// PortRule allows Access (bind or connect) on TCP port Port.
type PortRule struct{ Access, Port uint64 }

// Rlimit is one resource limit and the feature it enforces.
type Rlimit struct {
	Feature  string
	Resource int
	Cur, Max uint64
}

// Reply kinds: the first byte of each message from the helper.
const (
	// ReplyListener carries the proxy listener as SCM_RIGHTS.
	ReplyListener = 'L'
	// ReplyReport is the steps that failed (Failures) just before the
	// exec, or, if Refused, instead of it.
	ReplyReport = 'R'
	// ReplyError is why the helper could not confine the child or exec
	// its program: the rest of the message is the text.
	ReplyError = 'E'
)

// Failure is a step that failed: the features it enforces, and why.
type Failure struct {
	Features []string
	Why      string
}

// Report is a ReplyReport's body.
type Report struct {
	Failures []Failure
	Refused  bool
}

// The encoding: each field in order, strings and byte slices as a uvarint
// length and their bytes, lists as a uvarint count and their items, numbers
// as uvarints, booleans as one.

type encoder struct{ b []byte }

func (e *encoder) uint(v uint64) {
	for v >= 0x80 {
		e.b = append(e.b, byte(v)|0x80)
		v >>= 7
	}
	e.b = append(e.b, byte(v))
}
func (e *encoder) bool(v bool) {
	if v {
		e.uint(1)
	} else {
		e.uint(0)
	}
}
func (e *encoder) bytes(v []byte) { e.uint(uint64(len(v))); e.b = append(e.b, v...) }
func (e *encoder) str(v string)   { e.uint(uint64(len(v))); e.b = append(e.b, v...) }
func (e *encoder) strs(v []string) {
	e.uint(uint64(len(v)))
	for _, s := range v {
		e.str(s)
	}
}

type decoder struct {
	b   []byte
	err error
}

var errShort = errors.New("sandbox: the helper's message is cut short")

func (d *decoder) uint() uint64 {
	var v uint64
	for i, c := range d.b {
		if i == 10 {
			break
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			d.b = d.b[i+1:]
			return v
		}
	}
	d.err, d.b = errShort, nil
	return 0
}
func (d *decoder) bool() bool { return d.uint() != 0 }
func (d *decoder) bytes() []byte {
	n := d.uint()
	if n > uint64(len(d.b)) {
		d.err, d.b = errShort, nil
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}
func (d *decoder) str() string { return string(d.bytes()) }
func (d *decoder) count() int {
	n := d.uint()
	if n > uint64(len(d.b)) { // every item takes a byte at least
		d.err, d.b = errShort, nil
		return 0
	}
	return int(n)
}
func (d *decoder) strs() []string {
	var v []string
	for range d.count() {
		v = append(v, d.str())
	}
	return v
}

// Encode is r's encoding.
func (r *Request) Encode() []byte {
	var e encoder
	e.str(r.Path)
	e.strs(r.Args)
	e.strs(r.Env)
	e.bool(r.LoopbackUp)
	e.strs(r.Network)
	e.uint(uint64(r.ProxyPort))
	e.bytes(r.Seccomp)
	e.strs(r.SeccompFeatures)
	e.bool(r.Landlock != nil)
	if l := r.Landlock; l != nil {
		e.uint(l.FS)
		e.uint(l.Net)
		e.uint(l.Scoped)
		e.uint(uint64(len(l.Paths)))
		for _, p := range l.Paths {
			e.str(p.Path)
			e.uint(p.Dir)
			e.uint(p.File)
		}
		e.uint(uint64(len(l.Ports)))
		for _, p := range l.Ports {
			e.uint(p.Access)
			e.uint(p.Port)
		}
		e.strs(l.Features)
	}
	e.uint(uint64(len(r.Rlimits)))
	for _, l := range r.Rlimits {
		e.str(l.Feature)
		e.uint(uint64(l.Resource))
		e.uint(l.Cur)
		e.uint(l.Max)
	}
	e.str(r.Capabilities)
	e.strs(r.Fatal)
	e.uint(uint64(len(r.Join)))
	for _, j := range r.Join {
		e.str(j.File)
		e.strs(j.Features)
	}
	return e.b
}

// DecodeRequest is the Request b encodes.
func DecodeRequest(b []byte) (Request, error) {
	d := decoder{b: b}
	var r Request
	r.Path = d.str()
	r.Args = d.strs()
	r.Env = d.strs()
	r.LoopbackUp = d.bool()
	r.Network = d.strs()
	r.ProxyPort = uint16(d.uint())
	r.Seccomp = d.bytes()
	r.SeccompFeatures = d.strs()
	if d.bool() {
		l := &Ruleset{FS: d.uint(), Net: d.uint(), Scoped: d.uint()}
		for range d.count() {
			l.Paths = append(l.Paths, PathRule{Path: d.str(), Dir: d.uint(), File: d.uint()})
		}
		for range d.count() {
			l.Ports = append(l.Ports, PortRule{Access: d.uint(), Port: d.uint()})
		}
		l.Features = d.strs()
		r.Landlock = l
	}
	for range d.count() {
		r.Rlimits = append(r.Rlimits, Rlimit{Feature: d.str(), Resource: int(d.uint()), Cur: d.uint(), Max: d.uint()})
	}
	r.Capabilities = d.str()
	r.Fatal = d.strs()
	for range d.count() {
		r.Join = append(r.Join, Join{File: d.str(), Features: d.strs()})
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = errors.New("sandbox: the helper's request has bytes past its end")
	}
	return r, d.err
}

// Encode is rep's encoding, ReplyReport first.
func (rep *Report) Encode() []byte {
	e := encoder{b: []byte{ReplyReport}}
	e.uint(uint64(len(rep.Failures)))
	for _, f := range rep.Failures {
		e.strs(f.Features)
		e.str(f.Why)
	}
	e.bool(rep.Refused)
	return e.b
}

// DecodeReport is the Report b (a ReplyReport's body, after its kind byte)
// encodes.
func DecodeReport(b []byte) (Report, error) {
	d := decoder{b: b}
	var rep Report
	for range d.count() {
		rep.Failures = append(rep.Failures, Failure{Features: d.strs(), Why: d.str()})
	}
	rep.Refused = d.bool()
	return rep, d.err
}
