package sandbox_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/proctest"
)

// nobody is the uid and gid TestAsAnotherUser runs this package's tests as.
const nobody = 65534

// TestAsAnotherUser runs this package's tests again as a user other than
// root, when they run as root (CI and containers do): a daemon on a
// workstation is not root, and what the sandbox does differs for it (no
// writable cgroup: RLIMIT_NPROC holds its processes; a helper cloned into
// its user namespace loses on exec every capability it does not keep as
// ambient). Both broke unseen while the suite ran only as root.
func TestAsAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: this run of the tests is the run as another user")
	}
	proctest.CheckNoLeaks(t)
	// A directory the other user can enter, with a copy of this binary
	// (the go tool's build directory is root's alone) and a temporary
	// directory of its own.
	dir, err := os.MkdirTemp("", "mcpx-asuser-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	tmp := filepath.Join(dir, "tmp")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	// The binary in a directory of its own: a confined child may read its
	// program's directory.
	bin := filepath.Join(dir, "bin", "sandbox.test")
	if err := os.Mkdir(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(os.Args[0], bin, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	// TestDeps reads this package's source, which may be root's alone.
	cmd := exec.CommandContext(ctx, bin, "-test.count=1", "-test.timeout=4m", "-test.skip=^(TestAsAnotherUser|TestDeps)$")
	cmd.Dir = tmp
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + tmp, "TMPDIR=" + tmp, proctest.Env(t)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}, Setpgid: true}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("this package's tests as uid %d: %v\n%s", nobody, err, out)
	}
	t.Logf("as uid %d:\n%s", nobody, out)
}

func copyFile(from, to string, mode os.FileMode) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
