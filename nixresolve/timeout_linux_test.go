package nixresolve_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/proctree"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/nixresolve"
)

// TestTimeoutKillsGroup: a nix that hangs is killed at nix.timeout, with
// what it forked. The one fake nix of these tests: a real one cannot be
// made to hang on cue offline. It needs no nix installed.
func TestTimeoutKillsGroup(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "nix")
	script := "#!/bin/sh\necho $$ > " + dir + "/nix.pid\n/bin/sleep 300 &\necho $! > " + dir + "/child.pid\nwait\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := nixresolve.New(nixresolve.Options{CacheDir: t.TempDir(), Binary: fake, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	spec := "nix:github:mcpx-test/slow#x"
	_, err = r.Resolve(t.Context(), spec)
	checkErr(t, err, spec, nixresolve.ErrTimeout, "nix did not finish within 300ms (nix.timeout); it was killed")
	for _, f := range []string{"nix.pid", "child.pid"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		testenv.WaitFor(t, f+" to be killed", func() bool { return !running(pid) })
	}
}

// running reports whether pid is a live process (not gone, not a zombie).
func running(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// slowFlake's package never finishes building: its builder starts two
// sleeps, one of them in a session of its own, writes their pids (and its
// own) to PIDS, and waits.
const slowFlake = `{
  outputs = { self }: {
    packages.SYSTEM.slow = derivation {
      name = "slow"; system = "SYSTEM"; builder = "/bin/sh";
      args = [ "-c" "echo $$ > PIDS/builder.pid; /bin/sleep 1000 & echo $! > PIDS/sleep.pid; /usr/bin/setsid /bin/sleep 1000 & echo $! > PIDS/setsid.pid; wait" ];
    };
  };
}
`

// TestTimeoutKillsBuild (real-use 10): a real nix whose build runs past
// nix.timeout leaves nothing behind: not the builder nix ran in its own
// session, not what the builder started (in its session or in one of its
// own), and no nix-build-* directory, neither in the caller's TMPDIR nor
// under the cache.
func TestTimeoutKillsBuild(t *testing.T) {
	proctest.CheckNoLeaks(t)
	nx := testenv.Nix(t)
	pids := t.TempDir() // unique: the derivation is new, so it is built
	flake := t.TempDir()
	testenv.WriteFile(t, filepath.Join(flake, "flake.nix"),
		strings.NewReplacer("SYSTEM", nx.System, "PIDS", pids).Replace(slowFlake))
	tmp := t.TempDir()
	cache := t.TempDir()
	env := append(slices.DeleteFunc(slices.Clone(nx.Env), func(kv string) bool { return strings.HasPrefix(kv, "TMPDIR=") }), "TMPDIR="+tmp)
	r := newResolver(t, nx, cache, "", func(o *nixresolve.Options) {
		o.Env, o.Timeout = env, 5*time.Second
	})
	spec := "nix:path:" + flake + "#slow"
	done := make(chan error, 1)
	go func() { _, err := r.Resolve(t.Context(), spec); done <- err }()
	var procs []proctree.Proc
	for _, f := range []string{"builder.pid", "sleep.pid", "setsid.pid"} {
		testenv.WaitFor(t, "the build to start ("+f+")", func() bool {
			data, err := os.ReadFile(filepath.Join(pids, f))
			if err != nil || !strings.HasSuffix(string(data), "\n") {
				return false
			}
			pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
			p, ok := proctree.Read(pid)
			if ok {
				procs = append(procs, p)
			}
			return ok
		})
	}
	select {
	case err := <-done:
		t.Fatalf("the resolution ended before the build had started all its processes: %v", err)
	default:
	}
	checkErr(t, <-done, spec, nixresolve.ErrTimeout, "nix.timeout")
	for _, p := range procs {
		testenv.WaitFor(t, fmt.Sprintf("pid %d to be killed", p.Pid), func() bool { return !p.Alive() })
	}
	for _, dir := range []string{tmp, filepath.Join(cache, "tmp")} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			t.Errorf("left in %s after the timeout: %s", dir, e.Name())
		}
	}
}
