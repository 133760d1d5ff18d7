//go:build linux && cgo

package helper

// #cgo CFLAGS: -Wall -Wextra -O2
// #include <stdlib.h>
// #include "cstage_linux.h"
import "C"

import "unsafe"

// PreRuntime: this binary has the C stage (cstage_linux.c), which runs
// the helper before the Go runtime starts, and makes the namespaces
// itself when EnvUnshare says which.
const PreRuntime = true

// cMaxRequest is the C stage's bound on the request, for a test to
// compare with MaxRequest.
const cMaxRequest = C.MCPX_MAX_REQUEST

// errnoText is the C stage's text for errno e, for a test to compare with
// Go's.
func errnoText(e int) string { return C.GoString(C.mcpx_errno_text(C.int(e))) }

// cDecode is the C stage's decoding of b, as a Request, for a test to
// compare with DecodeRequest's; why is its error's text, "" if none.
func cDecode(b []byte) (r Request, why string) {
	var cr C.struct_request
	p := C.CBytes(append([]byte{0}, b...)) // never a nil pointer
	defer C.free(p)
	if e := C.mcpx_decode((*C.uchar)(unsafe.Add(p, 1)), C.size_t(len(b)), &cr); e != nil {
		return Request{}, C.GoString(e)
	}
	str := func(s C.struct_str) string { return C.GoStringN(s.p, C.int(s.n)) }
	strs := func(l C.struct_strs) []string {
		var out []string
		for _, s := range unsafe.Slice(l.v, l.n) {
			out = append(out, str(s))
		}
		return out
	}
	r = Request{
		Path: str(cr.path), Args: strs(cr.args), Env: strs(cr.env),
		LoopbackUp: cr.loopback != 0, Network: strs(cr.network), ProxyPort: uint16(cr.proxy_port),
		SeccompFeatures: strs(cr.seccomp_features), Capabilities: str(cr.capabilities), Fatal: strs(cr.fatal),
	}
	r.Seccomp = []byte(str(cr.seccomp))
	if cr.landlock != 0 {
		l := &Ruleset{FS: uint64(cr.ll_fs), Net: uint64(cr.ll_net), Scoped: uint64(cr.ll_scoped), Features: strs(cr.ll_features)}
		for _, p := range unsafe.Slice(cr.paths, cr.npaths) {
			l.Paths = append(l.Paths, PathRule{Path: str(p.path), Dir: uint64(p.dir), File: uint64(p.file)})
		}
		for _, p := range unsafe.Slice(cr.ports, cr.nports) {
			l.Ports = append(l.Ports, PortRule{Access: uint64(p.access), Port: uint64(p.port)})
		}
		r.Landlock = l
	}
	for _, l := range unsafe.Slice(cr.rlimits, cr.nrlimits) {
		r.Rlimits = append(r.Rlimits, Rlimit{Feature: str(l.feature), Resource: int(l.resource), Cur: uint64(l.cur), Max: uint64(l.max)})
	}
	for _, j := range unsafe.Slice(cr.joins, cr.njoins) {
		r.Join = append(r.Join, Join{File: str(j.file), Features: strs(j.features)})
	}
	return r, ""
}
