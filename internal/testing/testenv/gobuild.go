package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// GoBuild runs cmd, a `go build` of this module, holding a lock that
// every other GoBuild on this machine waits for. Tests of several
// packages build mcpx with the same flags (deploy's static binary,
// cmd/mcpx's plain one for its scripts); run at once, each would compile
// the whole module and its dependencies itself (the build cache shares
// finished work, not work under way) — about two minutes of CPU each on a
// cold cache. One at a time, the second finds the first's packages in the
// cache and only links.
func GoBuild(cmd *exec.Cmd) ([]byte, error) {
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "mcpx-test-gobuild.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err == nil {
		defer lock.Close()
		// Without the lock (a shared /tmp another user owns it in, say)
		// the build runs all the same, only not alone.
		if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX) == nil {
			defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
		}
	}
	return cmd.CombinedOutput()
}
