//go:build linux

package sandbox_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// fixture is a confined child's world: a worktree root and a private tmp
// it may write, and beside them what it must not reach: another
// worktree, a fake home with an ssh key.
type fixture struct {
	dir     string // everything below is in it
	root    string // the child's worktree: read and write
	tmp     string // the child's private tmp: read and write
	other   string // a file in another worktree
	sshKey  string // $HOME/.ssh/id_ed25519 of a fake home
	inRoot  string // a file in root
	policy  sandbox.Policy
	testBin string
	kernel  sandbox.Kernel
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	dir := t.TempDir()
	f := fixture{
		dir:     dir,
		root:    filepath.Join(dir, "worktree-a"),
		tmp:     filepath.Join(dir, "tmp-a"),
		other:   filepath.Join(dir, "worktree-b", "secret.txt"),
		sshKey:  filepath.Join(dir, "home", ".ssh", "id_ed25519"),
		testBin: testBinary(t),
		kernel:  sandbox.Probe(),
	}
	f.inRoot = filepath.Join(f.root, "README")
	for _, file := range []string{f.other, f.sshKey, f.inRoot} {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte("secret of "+file+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(f.tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	f.policy = sandbox.Policy{
		Read:    append(sandbox.SystemRead(), f.testBin, f.root),
		Write:   append([]string{f.root, f.tmp}, sandbox.Devices()...),
		Network: sandbox.NetworkNone,
		Env:     []string{"HOME=" + f.tmp, "TMPDIR=" + f.tmp, "LANG=C.UTF-8"},
	}
	return f
}

// requireKernel skips t (fails it with MCPX_REQUIRE_DEPS=1) unless this
// kernel has what the test confines with.
func requireKernel(t *testing.T, landlock int, namespaces bool) {
	t.Helper()
	k := sandbox.Probe()
	var missing []string
	if k.Landlock < landlock {
		missing = append(missing, "Landlock ABI "+itoa(landlock)+" (have "+itoa(k.Landlock)+": "+k.LandlockWhy+")")
	}
	if namespaces && !k.Namespaces {
		missing = append(missing, "user and network namespaces ("+k.NamespacesWhy+")")
	}
	if len(missing) == 0 {
		return
	}
	msg := "this kernel lacks " + strings.Join(missing, " and ")
	if os.Getenv("MCPX_REQUIRE_DEPS") == "1" {
		t.Fatalf("%s (MCPX_REQUIRE_DEPS=1: missing test dependencies are failures)", msg)
	}
	t.Skip(msg)
}

func itoa(n int) string { return strconv.Itoa(n) }
