//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"mcpx.dev/mcpx/internal/testing/proctest"
)

// A hybrid machine (this one): controllers on v1, an empty v2 beside them.
const hybridMountinfo = `25 30 0:23 / /sys rw,nosuid - sysfs sysfs rw
31 25 0:27 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755
32 31 0:28 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw
36 31 0:32 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
40 31 0:36 / /sys/fs/cgroup/pids rw,nosuid - cgroup cgroup rw,pids
41 31 0:37 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct
`

const hybridSelf = `8:pids:/
4:memory:/process_api/abc
1:cpu,cpuacct:/
0::/
`

func TestParseMountinfo(t *testing.T) {
	got := parseMountinfo(hybridMountinfo + `50 31 0:40 /sub /mnt/with\040space rw - cgroup2 cgroup2 rw` + "\n")
	want := []cgroupMount{
		{root: "/", point: "/sys/fs/cgroup/unified", version: 2},
		{root: "/", point: "/sys/fs/cgroup/memory", version: 1, controllers: []string{"rw", "memory"}},
		{root: "/", point: "/sys/fs/cgroup/pids", version: 1, controllers: []string{"rw", "pids"}},
		{root: "/", point: "/sys/fs/cgroup/cpu,cpuacct", version: 1, controllers: []string{"rw", "cpu", "cpuacct"}},
		{root: "/sub", point: "/mnt/with space", version: 2},
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(cgroupMount{})); d != "" {
		t.Errorf("parseMountinfo (-want +got):\n%s", d)
	}
}

func TestOwnCgroup(t *testing.T) {
	for _, tc := range []struct{ controller, want string }{
		{"memory", "/process_api/abc"}, {"pids", "/"}, {"cpuacct", "/"}, {"", "/"},
	} {
		if got, ok := ownCgroup(hybridSelf, tc.controller); !ok || got != tc.want {
			t.Errorf("ownCgroup(%q) = %q, %t; want %q", tc.controller, got, ok, tc.want)
		}
	}
	if _, ok := ownCgroup(hybridSelf, "rdma"); ok {
		t.Error("ownCgroup found a controller that is not there")
	}
}

// fakeV2 lays out a cgroup v2 tree in a temporary directory: the daemon's
// cgroup /user.slice/mcpx.service, delegated the given controllers.
func fakeV2(t *testing.T, controllers string) (cgroupFS, string) {
	t.Helper()
	mnt := t.TempDir()
	dir := filepath.Join(mnt, "user.slice", "mcpx.service")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"cgroup.controllers": controllers, "cgroup.subtree_control": "", "cgroup.procs": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return cgroupFS{
		mountinfo: fmt.Sprintf("30 25 0:26 / %s rw,nosuid - cgroup2 cgroup2 rw\n", mnt),
		self:      "0::/user.slice/mcpx.service\n",
	}, dir
}

// TestProbeCgroupsV2: on a pure cgroup v2 machine, the daemon's own
// cgroup is where children's cgroups go when memory and pids are delegated
// to it; when they are not, the reason says how to delegate them.
func TestProbeCgroupsV2(t *testing.T) {
	fs, dir := fakeV2(t, "cpu memory pids")
	mem, pids, why := probeCgroups(fs)
	want := CgroupDir{Dir: dir, Version: 2}
	if mem != want || pids != want || why != "" {
		t.Errorf("delegated: memory %v, pids %v, why %q; want %v for both", mem, pids, why, want)
	}
	fs, _ = fakeV2(t, "cpu")
	mem, pids, why = probeCgroups(fs)
	if mem.Dir != "" || pids.Dir != "" || !strings.Contains(why, "Delegate=yes") {
		t.Errorf("not delegated: memory %v, pids %v, why %q; want none, and how to delegate", mem, pids, why)
	}
}

// TestProbeCgroupsV1: on a hybrid machine each controller's own v1
// hierarchy holds the daemon's cgroup.
func TestProbeCgroupsV1(t *testing.T) {
	mnt := t.TempDir()
	mountinfo := strings.ReplaceAll(hybridMountinfo, "/sys/fs/cgroup", mnt)
	for _, d := range []string{"memory/process_api/abc", "pids", "unified"} {
		os.MkdirAll(filepath.Join(mnt, d), 0o755)
	}
	mem, pids, why := probeCgroups(cgroupFS{mountinfo: mountinfo, self: hybridSelf})
	if mem != (CgroupDir{filepath.Join(mnt, "memory/process_api/abc"), 1}) || pids != (CgroupDir{filepath.Join(mnt, "pids"), 1}) || why != "" {
		t.Errorf("memory %v, pids %v, why %q", mem, pids, why)
	}
}

// TestLimitFiles: what a child's cgroup is told, in v1 and v2.
func TestLimitFiles(t *testing.T) {
	l := Limits{Memory: 64 << 20, Processes: 32}
	for _, tc := range []struct {
		c     cgroup
		files []string // present beforehand, as the kernel makes them
		want  map[string]string
	}{
		{cgroup{Version: 1, Memory: true}, []string{"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"},
			map[string]string{"memory.limit_in_bytes": "67108864", "memory.memsw.limit_in_bytes": "67108864"}},
		{cgroup{Version: 1, Memory: true}, []string{"memory.limit_in_bytes"}, // no swap accounting
			map[string]string{"memory.limit_in_bytes": "67108864"}},
		{cgroup{Version: 1, Pids: true}, []string{"pids.max"}, map[string]string{"pids.max": "32"}},
		{cgroup{Version: 2, Memory: true, Pids: true}, []string{"memory.max", "memory.swap.max", "memory.oom.group", "pids.max"},
			map[string]string{"memory.max": "67108864", "memory.swap.max": "0", "memory.oom.group": "1", "pids.max": "32"}},
	} {
		tc.c.Dir = t.TempDir()
		for _, f := range tc.files {
			os.WriteFile(filepath.Join(tc.c.Dir, f), nil, 0o644)
		}
		if err := tc.c.limit(l); err != nil {
			t.Errorf("%+v: %v", tc.c, err)
			continue
		}
		got := map[string]string{}
		for _, f := range tc.files {
			b, _ := os.ReadFile(filepath.Join(tc.c.Dir, f))
			got[f] = string(b)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%+v (-want +got):\n%s", tc.c, d)
		}
	}
}

func TestReadCounters(t *testing.T) {
	v1m, v1p, v2 := cgroup{Dir: t.TempDir(), Version: 1, Memory: true}, cgroup{Dir: t.TempDir(), Version: 1, Pids: true}, cgroup{Dir: t.TempDir(), Version: 2, Memory: true, Pids: true}
	os.WriteFile(filepath.Join(v1m.Dir, "memory.oom_control"), []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"), 0o644)
	os.WriteFile(filepath.Join(v1p.Dir, "pids.events"), []byte("max 3\n"), 0o644)
	os.WriteFile(filepath.Join(v2.Dir, "memory.events"), []byte("low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\n"), 0o644)
	os.WriteFile(filepath.Join(v2.Dir, "pids.events"), []byte("max 0\n"), 0o644)
	if got, want := readCounters([]cgroup{v1m, v1p}), (counters{OOMKills: 2, PidsMax: 3}); got != want {
		t.Errorf("v1: %+v, want %+v", got, want)
	}
	if got, want := readCounters([]cgroup{v2}), (counters{OOMKills: 1}); got != want {
		t.Errorf("v2: %+v, want %+v", got, want)
	}
}

// realV2 returns this machine's cgroup v2 mount and the daemon's cgroup
// directory in it, skipping t where there is none it may write.
func realV2(t *testing.T) string {
	t.Helper()
	mountinfo, self, err := cgroupFS{}.read()
	if err != nil {
		t.Skip(err)
	}
	for _, m := range parseMountinfo(mountinfo) {
		if m.version != 2 {
			continue
		}
		path, _ := ownCgroup(self, "")
		if dir, ok := m.dir(path); ok && syscall.Access(dir, 2) == nil {
			return dir
		}
	}
	t.Skip("no writable cgroup v2 hierarchy here")
	return ""
}

// sleeperIn makes the cgroup dir and starts a sleeper in it; both are gone
// when t ends.
func sleeperIn(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	cmd := exec.Command("/bin/sleep", "60")
	cmd.Env = []string{proctest.Env(t)}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if err := writeFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(cmd.Process.Pid)); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// TestV2MoveKillRemove exercises, on this machine's real cgroup v2
// hierarchy (which here has no controllers), the v2 steps that need none:
// moving a cgroup's processes to a leaf (what enableV2 does to the
// daemon's own before it enables controllers), and removing a child's
// cgroup, cgroup.kill first.
func TestV2MoveKillRemove(t *testing.T) {
	proctest.CheckNoLeaks(t)
	base := realV2(t)
	parent := filepath.Join(base, fmt.Sprintf("mcpx-test-%d", os.Getpid()))
	cmd := sleeperIn(t, parent)
	leaf := filepath.Join(parent, "mcpx-daemon")
	if err := moveToLeaf(parent, leaf); err != nil {
		t.Fatal(err)
	}
	if pids, _ := readPids(filepath.Join(parent, "cgroup.procs")); len(pids) != 0 {
		t.Errorf("%s still holds %v", parent, pids)
	}
	if pids, _ := readPids(filepath.Join(leaf, "cgroup.procs")); !slices.Equal(pids, []int{cmd.Process.Pid}) {
		t.Errorf("%s holds %v, want the sleeper %d", leaf, pids, cmd.Process.Pid)
	}
	// No controller is available here: nothing to enable, nothing moved.
	if b, _ := os.ReadFile(filepath.Join(parent, "cgroup.controllers")); strings.TrimSpace(string(b)) == "" {
		if err := enableV2(parent); err != nil {
			t.Errorf("enableV2 with no controllers: %v", err)
		}
	}
	left, err := cgroup{Dir: leaf, Version: 2}.remove()
	if err != nil {
		t.Fatal(err)
	}
	if left != 1 {
		t.Errorf("remove found %d processes left, want 1", left)
	}
	if _, err := os.Stat(leaf); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", leaf, err)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the sleeper ended %v; want killed", err)
	}
}

// TestTakenCgroupName: a cgroup that exists already under a v2 clone's
// name is an error, never emptied, since an adopted child (of the daemon
// this one upgraded in place, with its pid) may live there; under a v1
// name, made for a child's pid, it is a dead daemon's and is emptied and
// made anew. On this machine's real v2 hierarchy, with no limits.
func TestTakenCgroupName(t *testing.T) {
	proctest.CheckNoLeaks(t)
	base := realV2(t)
	k := Kernel{Pids: CgroupDir{Dir: base, Version: 2}}
	name := fmt.Sprintf("mcpx-test-taken-%d", os.Getpid())
	dir := filepath.Join(base, name)
	cmd := sleeperIn(t, dir)

	if cgs, err := newCgroups(k, 2, name, Limits{}, false); err == nil || !errors.Is(err, os.ErrExist) {
		removeCgroups(cgs)
		t.Fatalf("a taken clone name: %v; want an error that it exists", err)
	}
	if pids, _ := readPids(filepath.Join(dir, "cgroup.procs")); !slices.Equal(pids, []int{cmd.Process.Pid}) {
		t.Fatalf("%s holds %v after the refusal; want the sleeper %d, untouched", dir, pids, cmd.Process.Pid)
	}

	cgs, err := newCgroups(k, 2, name, Limits{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the stale cgroup's sleeper ended %v; want killed", err)
	}
	if left, err := removeCgroups(cgs); err != nil || left != 0 {
		t.Errorf("removing the new cgroup: %d left, %v", left, err)
	}
}
