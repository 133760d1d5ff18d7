package helper

import (
	"go/build"
	"reflect"
	"testing"
)

// TestImports: the helper runs in this package's init, right after
// syscall's, only while this package imports nothing that waits for os
// (package doc). x/sys/unix, encoding/binary or fmt here would let
// hundreds of packages' inits run first, in every confined child's start.
func TestImports(t *testing.T) {
	t.Parallel()
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	// C (cstage_linux.go) brings runtime/cgo, which has no init to wait
	// for: the Go helper still runs after syscall's init, with 13 inits
	// before it in the pool's test binary, built with cgo or without
	// (GODEBUG=inittrace=1).
	allowed := map[string]bool{"errors": true, "syscall": true, "unsafe": true, "C": true}
	for _, imp := range pkg.Imports {
		if !allowed[imp] {
			t.Errorf("package helper imports %s: only errors, syscall and unsafe (and C), which are initialized before os", imp)
		}
	}
}

// sampleRequest sets every field of a Request.
func sampleRequest() Request {
	return Request{
		Path: "/usr/bin/node", Args: []string{"node", "index.js", ""}, Env: []string{"PATH=/usr/bin", "HOME=/tmp/x"},
		LoopbackUp: true, Network: []string{"network"}, ProxyPort: 40123,
		Seccomp: []byte{1, 2, 3, 4, 5, 6, 7, 8}, SeccompFeatures: []string{"unix-sockets"},
		Landlock: &Ruleset{FS: 1<<16 - 1, Net: 3, Scoped: 3,
			Paths:    []PathRule{{Path: "/usr", Dir: 7, File: 5}, {Path: "/tmp/ü", Dir: 1 << 40, File: 0}},
			Ports:    []PortRule{{Access: 2, Port: 443}},
			Features: []string{"filesystem", "ipc"}},
		Rlimits:      []Rlimit{{Feature: "open-files", Resource: 7, Cur: 1024, Max: 1024}, {Feature: "core-dumps", Resource: 4}},
		Capabilities: "capabilities", Fatal: []string{"filesystem", "network"},
		Join: []Join{{File: "/sys/fs/cgroup/memory/mcpx-1/tasks", Features: []string{"memory"}}, {File: "/sys/fs/cgroup/pids/mcpx-1/tasks"}},
	}
}

func TestRequestRoundTrip(t *testing.T) {
	t.Parallel()
	req := sampleRequest()
	b := req.Encode()
	got, err := DecodeRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, req) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, req)
	}
	for n := range len(b) { // every cut is an error, never a panic
		if _, err := DecodeRequest(b[:n]); err == nil {
			t.Fatalf("DecodeRequest of the first %d of %d bytes: no error", n, len(b))
		}
	}
	rep := Report{Failures: []Failure{{Features: []string{"network"}, Why: "bringing lo up: operation not permitted"}}, Refused: true}
	enc := rep.Encode()
	if enc[0] != ReplyReport {
		t.Fatalf("a report's kind is %q", enc[0])
	}
	if got, err := DecodeReport(enc[1:]); err != nil || !reflect.DeepEqual(got, rep) {
		t.Errorf("report round trip: %+v, %v; want %+v", got, err, rep)
	}
}
