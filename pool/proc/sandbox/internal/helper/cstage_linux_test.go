//go:build linux && cgo

package helper

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"syscall"
	"testing"
)

func TestCStageConstants(t *testing.T) {
	t.Parallel()
	if cMaxRequest != MaxRequest {
		t.Errorf("the C stage reads requests up to %d bytes, the daemon sends up to %d", cMaxRequest, MaxRequest)
	}
}

// TestErrnoText: the C stage's failures read as the Go helper's, whose
// texts are Go's syscall.Errno's (the daemon shows them; tests match
// them).
func TestErrnoText(t *testing.T) {
	t.Parallel()
	for e := range 140 {
		if got, want := errnoText(e), syscall.Errno(e).Error(); got != want && e != 0 {
			t.Errorf("errno %d: the C stage says %q, Go %q", e, got, want)
		}
	}
}

// TestCDecode: the C stage decodes what the Go helper decodes, and fails
// where it fails, with the same text: every request, every cut of one,
// and some 1,600 mutations of them.
func TestCDecode(t *testing.T) {
	t.Parallel()
	full := sampleRequest()
	bare := Request{Path: "/bin/x"}
	nul := sampleRequest()
	nul.Path, nul.Landlock.Paths[0].Path, nul.Env[0] = "/usr/bin/\x00node", "/usr\x00/x", "A=\x00"
	check := func(what string, b []byte) {
		t.Helper()
		want, werr := DecodeRequest(b)
		got, why := cDecode(b)
		switch {
		case werr != nil && why != werr.Error():
			t.Errorf("%s: the C stage says %q, Go %q", what, why, werr)
		case werr == nil && why != "":
			t.Errorf("%s: the C stage fails (%s) where Go decodes %+v", what, why, want)
		case werr == nil && !reflect.DeepEqual(got, want):
			t.Errorf("%s: the C stage decodes\n%+v\nGo\n%+v", what, got, want)
		}
	}
	rng := rand.New(rand.NewPCG(32, 1))
	for _, req := range []Request{full, bare, nul, {}} {
		b := req.Encode()
		check("whole", b)
		check("one more byte", append(b[:len(b):len(b)], 0))
		for n := range len(b) {
			check("cut", b[:n])
		}
		for range 400 {
			m := append([]byte(nil), b...)
			for range 1 + rng.IntN(3) {
				m[rng.IntN(len(m))] = byte(rng.Uint32())
			}
			check("mutated", m)
		}
	}
	// Counts and lengths past what is there, and a varint of 11 bytes.
	check("huge count", []byte{0, 0x80, 0x80, 0x80, 0x80, 0x10})
	check("a list cut at its first item", append([]byte{0, 50, 0x7f}, make([]byte, 49)...))
	check("huge length", []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 'x'})
	long := append(append(bytes.Repeat([]byte{0x80}, 10), 0), (&Request{Args: []string{"a"}}).Encode()[1:]...)
	check("long varint", long) // the path's length, 0 in 11 bytes
}
