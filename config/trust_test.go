package config_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"mcpx.dev/mcpx/config"
)

// The users of TestTrusted's files when it runs as root, which can chown
// to anyone: the user the check is for, and another one.
const (
	trustUser = 12345
	otherUser = 23456
)

// TestTrusted: one rule for every config file on a chain, real files with
// real owners. The user's own file and root's are trusted; another
// user's, and a group- or world-writable one whoever owns it, are not.
// The broker's old copy of the rule skipped root's file (it trusted the
// daemon's uid alone); the CLI's trusted it.
func TestTrusted(t *testing.T) {
	dir := t.TempDir()
	root := os.Getuid() == 0
	file := func(name string, owner int, perm fs.FileMode) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(`{"servers": {}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, perm); err != nil { // not the umask's
			t.Fatal(err)
		}
		if root {
			if err := os.Chown(p, owner, owner); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	// The user the rule is checked for, and the file owners: as root,
	// real other users; otherwise this user plays the one checked for
	// another uid, and root's file is one root owns already.
	user, other := trustUser, otherUser
	rootFile := func(perm fs.FileMode) string { return file("root", 0, perm) }
	if !root {
		user, other = os.Getuid()+1, os.Getuid()
		rootFile = func(perm fs.FileMode) string {
			t.Helper()
			fi, err := os.Stat("/etc/passwd")
			if err != nil || fi.Mode().Perm() != perm {
				t.Fatalf("not root, and /etc/passwd is not a root-owned file of mode %o (%v) to test with: run as root", perm, err)
			}
			return "/etc/passwd"
		}
	}
	for _, tc := range []struct {
		name string
		path string
		want string // "" = trusted; else in the error
	}{
		{"the user's own", file("own", user, 0o644), ""},
		{"the user's own, owner-only", file("own-private", user, 0o600), ""},
		{"root's, read-only to the user", rootFile(0o644), ""},
		{"another user's", file("other", other, 0o644), "another user (uid " + strconv.Itoa(other) + ") owns it"},
		{"the user's own, group-writable", file("own-group", user, 0o664), "other users may write it (mode 664)"},
		{"the user's own, world-writable", file("own-world", user, 0o646), "other users may write it (mode 646)"},
		{"another user's, group-writable", file("other-group", other, 0o664), "another user"},
	} {
		fi, err := os.Stat(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		err = config.TrustedInfo(fi, user)
		var ue *config.UntrustedError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s (%s): %v, want it trusted", tc.name, tc.path, err)
		case tc.want != "" && (!errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s (%s): %v, want an UntrustedError saying %q", tc.name, tc.path, err, tc.want)
		}
	}
	if root {
		// Root-owned and group-writable: still not trusted (owner root
		// widens the owners, never the writers).
		p := file("root-group", 0, 0o664)
		if err := readTrusted(p); err == nil || !strings.Contains(err.Error(), "mode 664") {
			t.Errorf("root's group-writable file: %v, want not trusted", err)
		}
	}
	// ReadTrusted is TrustedInfo for the user it is given; a file it
	// cannot open is not trusted, and the error is the open's.
	own := file("mine", os.Getuid(), 0o644)
	if root {
		if err := os.Chown(own, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := readTrusted(own); err != nil {
		t.Errorf("this user's own file: %v, want it trusted", err)
	}
	var ue *config.UntrustedError
	if err := readTrusted(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) || errors.As(err, &ue) {
		t.Errorf("a missing file: %v, want the stat's error", err)
	}
}

// TestReadTrusted: the content of a trusted file, through a symlink too;
// an untrusted file, a directory and a FIFO are refused unread, saying
// why — the FIFO at once, not once a writer comes (a plain open and read
// of it would wait for one forever).
func TestReadTrusted(t *testing.T) {
	dir := t.TempDir()
	uid := os.Getuid()
	ok := filepath.Join(dir, "ok.json")
	if err := os.WriteFile(ok, []byte(`{"servers":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(ok, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{ok, link} {
		data, fi, err := config.ReadTrusted(p, uid)
		if err != nil || string(data) != `{"servers":{}}` || fi == nil || !fi.Mode().IsRegular() {
			t.Errorf("ReadTrusted(%s) = %q, %v, %v; want the file's content", p, data, fi, err)
		}
	}
	open := filepath.Join(dir, "open.json")
	if err := os.WriteFile(open, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o666)
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for p, why := range map[string]string{open: "other users may write it", dir: "not a regular file", fifo: "not a regular file"} {
		data, _, err := config.ReadTrusted(p, uid)
		var untrusted *config.UntrustedError
		if !errors.As(err, &untrusted) || !strings.Contains(err.Error(), why) || data != nil {
			t.Errorf("ReadTrusted(%s) = %q, %v; want refused unread: %q", p, data, err, why)
		}
	}
	if _, _, err := config.ReadTrusted(filepath.Join(dir, "missing.json"), uid); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
}

// readTrusted is ReadTrusted's verdict for this process's user.
func readTrusted(path string) error {
	_, _, err := config.ReadTrusted(path, os.Getuid())
	return err
}
