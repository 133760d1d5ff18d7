package sandbox

import (
	"errors"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestLandlockRights checks the table of rights per Landlock ABI, which
// go-landlock used to keep, against the kernel's own numbering: the
// filesystem rights are bits 0 to 12 in ABI 1, and each later right the
// next bit (refer 13 in ABI 2, truncate 14 in 3, ioctl_dev 15 in 5,
// resolve_unix 16 in 9; go-landlock's abiInfos say the same).
func TestLandlockRights(t *testing.T) {
	const (
		tcp    = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		scopes = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	)
	want := []landlockRights{
		0:  {},
		1:  {fs: 1<<13 - 1},
		2:  {fs: 1<<14 - 1},
		3:  {fs: 1<<15 - 1},
		4:  {fs: 1<<15 - 1, net: tcp},
		5:  {fs: 1<<16 - 1, net: tcp},
		6:  {fs: 1<<16 - 1, net: tcp, scoped: scopes},
		7:  {fs: 1<<16 - 1, net: tcp, scoped: scopes},
		8:  {fs: 1<<16 - 1, net: tcp, scoped: scopes},
		9:  {fs: 1<<17 - 1, net: tcp, scoped: scopes}, // UDP (ABI 10) is never handled
		10: {fs: 1<<17 - 1, net: tcp, scoped: scopes},
		11: {fs: 1<<17 - 1, net: tcp, scoped: scopes},
		12: {fs: 1<<17 - 1, net: tcp, scoped: scopes}, // newer than the table: its newest
	}
	for abi, w := range want {
		if got := handledRights(abi, true); got != w {
			t.Errorf("ABI %d with TCP handles %+v, want %+v", abi, got, w)
		}
		w.net = 0
		if got := handledRights(abi, false); got != w {
			t.Errorf("ABI %d without TCP handles %+v, want %+v", abi, got, w)
		}
	}
	if h := handledRights(1, true).fs; h&(unix.LANDLOCK_ACCESS_FS_REFER|unix.LANDLOCK_ACCESS_FS_TRUNCATE) != 0 {
		t.Errorf("ABI 1 handles %#x: refer or truncate, which came with ABIs 2 and 3", h)
	}
}

// TestPathRights checks what a rule grants: within what the ruleset
// handles (else landlock_add_rule fails), a file only file rights (else
// EINVAL), a read rule no write right, refer only on write directories.
func TestPathRights(t *testing.T) {
	const (
		read  = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE
		write = unix.LANDLOCK_ACCESS_FS_WRITE_FILE
		trunc = unix.LANDLOCK_ACCESS_FS_TRUNCATE
		refer = unix.LANDLOCK_ACCESS_FS_REFER
		dir   = unix.LANDLOCK_ACCESS_FS_READ_DIR
		make  = unix.LANDLOCK_ACCESS_FS_MAKE_REG
	)
	for abi := 1; abi < len(landlockAdded); abi++ {
		h := handledRights(abi, false).fs
		for _, rule := range []struct{ dir, write bool }{{true, true}, {true, false}, {false, true}, {false, false}} {
			a := pathRights(h, rule.dir, rule.write)
			if a&^h != 0 {
				t.Errorf("ABI %d, %+v: grants %#x, which the ruleset does not handle", abi, rule, a&^h)
			}
			if !rule.dir && a&^fsFile != 0 {
				t.Errorf("ABI %d, %+v: a file rule grants directory rights %#x", abi, rule, a&^fsFile)
			}
			if !rule.write && a&^fsRead != 0 {
				t.Errorf("ABI %d, %+v: a read rule grants %#x", abi, rule, a&^fsRead)
			}
		}
	}
	for _, c := range []struct {
		abi        int
		dir, write bool
		want       uint64
	}{
		{1, true, false, read | dir},
		{1, false, true, read | write},
		{1, true, true, read | dir | fsWrite&^trunc},
		{2, true, true, read | dir | fsWrite&^trunc | refer},
		{3, false, true, read | write | trunc},
		{3, true, true, read | dir | fsWrite | refer},
		{9, true, true, read | dir | fsWrite | refer}, // never ioctl_dev or resolve_unix
		{9, false, false, read},
	} {
		if got := pathRights(handledRights(c.abi, false).fs, c.dir, c.write); got != c.want {
			t.Errorf("ABI %d, dir %t, write %t: grants %#x, want %#x", c.abi, c.dir, c.write, got, c.want)
		}
	}
	if pathRights(handledRights(3, false).fs, true, true)&make == 0 {
		t.Error("a write directory may not make files")
	}
}

// TestLandlockRightsKernel asks this kernel whether the table agrees with
// it: a ruleset handling its ABI's rights is accepted, and one with the
// next ABI that adds rights is refused (EINVAL).
func TestLandlockRightsKernel(t *testing.T) {
	abi, err := landlockVersion(unix.LANDLOCK_CREATE_RULESET_VERSION)
	if err != nil {
		msg := "this kernel lacks Landlock (" + err.Error() + "); TestLandlockRights still checks the table"
		if os.Getenv("MCPX_REQUIRE_DEPS") == "1" {
			t.Fatalf("%s (MCPX_REQUIRE_DEPS=1: missing test dependencies are failures)", msg)
		}
		t.Skip(msg)
	}
	create := func(r landlockRights) error {
		attr := unix.LandlockRulesetAttr{Handled_access_fs: r.fs, Handled_access_net: r.net, Scoped: r.scoped}
		fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
		if e != 0 {
			return e
		}
		unix.Close(int(fd))
		return nil
	}
	here := handledRights(abi, true)
	t.Logf("Landlock ABI %d: %+v", abi, here)
	if err := create(here); err != nil {
		t.Fatalf("Landlock ABI %d refuses the rights the table gives it, %+v: %v", abi, here, err)
	}
	for next := abi + 1; next < len(landlockAdded); next++ {
		if r := handledRights(next, true); r != here {
			if err := create(r); !errors.Is(err, unix.EINVAL) {
				t.Errorf("Landlock ABI %d accepts the rights of ABI %d, %+v (%v): the table gives them to too late an ABI", abi, next, r, err)
			}
			break
		}
	}
}
