package sandbox

import (
	"bufio"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"mcpx.dev/mcpx/pool/proc/sandbox/internal/helper"
)

// cgroupFS is where probeCgroups reads the mounts and the daemon's own
// cgroups: /proc/self by default, text of the same form in tests.
type cgroupFS struct {
	mountinfo, self string // contents; "" reads /proc/self/{mountinfo,cgroup}
}

func (fs cgroupFS) read() (mountinfo, self string, err error) {
	mountinfo, self = fs.mountinfo, fs.self
	if mountinfo == "" {
		b, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			return "", "", err
		}
		mountinfo = string(b)
	}
	if self == "" {
		b, err := os.ReadFile("/proc/self/cgroup")
		if err != nil {
			return "", "", err
		}
		self = string(b)
	}
	return mountinfo, self, nil
}

// cgroupMount is one cgroup file system mount: v1 with its controllers, or v2.
type cgroupMount struct {
	root, point string // the mount's root within the hierarchy, and where it is mounted
	version     int
	controllers []string // v1 only
}

func parseMountinfo(text string) []cgroupMount {
	var out []cgroupMount
	for line := range strings.Lines(text) {
		pre, post, ok := strings.Cut(strings.TrimSpace(line), " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		m := cgroupMount{root: unescapeMount(f[3]), point: unescapeMount(f[4])}
		switch g[0] {
		case "cgroup":
			m.version = 1
			m.controllers = strings.Split(g[2], ",")
		case "cgroup2":
			m.version = 2
		default:
			continue
		}
		out = append(out, m)
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroup returns the daemon's cgroup path in the hierarchy that has
// controller (v1), or in the v2 hierarchy when controller is "".
func ownCgroup(self, controller string) (string, bool) {
	for line := range strings.Lines(self) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 {
			continue
		}
		if controller == "" && f[0] == "0" && f[1] == "" {
			return f[2], true
		}
		if controller != "" && slices.Contains(strings.Split(f[1], ","), controller) {
			return f[2], true
		}
	}
	return "", false
}

// dir returns the directory of cgroup path in mount m.
func (m cgroupMount) dir(path string) (string, bool) {
	rel, err := filepath.Rel(m.root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return filepath.Join(m.point, rel), true
}

// probeCgroups finds, for the memory and pids controllers, the daemon's own
// cgroup if it is writable: v1 where the controller is mounted on its own
// hierarchy, else v2 where the controller is delegated to the daemon's
// cgroup (listed in its cgroup.controllers).
func probeCgroups(fs cgroupFS) (memory, pids CgroupDir, why string) {
	mountinfo, self, err := fs.read()
	if err != nil {
		return CgroupDir{}, CgroupDir{}, fmt.Sprintf("reading the daemon's cgroups: %v", err)
	}
	mounts := parseMountinfo(mountinfo)
	var whys []string
	memory, w := findCgroup(mounts, self, "memory")
	if w != "" {
		whys = append(whys, w)
	}
	pids, w = findCgroup(mounts, self, "pids")
	if w != "" {
		whys = append(whys, w)
	}
	return memory, pids, strings.Join(whys, "; ")
}

func findCgroup(mounts []cgroupMount, self, controller string) (CgroupDir, string) {
	for _, m := range mounts {
		if m.version != 1 || !slices.Contains(m.controllers, controller) {
			continue
		}
		path, ok := ownCgroup(self, controller)
		dir, ok2 := m.dir(path)
		if !ok || !ok2 {
			return CgroupDir{}, fmt.Sprintf("%s: the daemon's cgroup %q is not under the v1 mount %s", controller, path, m.point)
		}
		if err := unix.Access(dir, unix.W_OK); err != nil {
			return CgroupDir{}, fmt.Sprintf("%s: the daemon's cgroup v1 %s is not writable (%v)", controller, dir, err)
		}
		return CgroupDir{Dir: dir, Version: 1}, ""
	}
	for _, m := range mounts {
		if m.version != 2 {
			continue
		}
		path, ok := ownCgroup(self, "")
		dir, ok2 := m.dir(path)
		if !ok || !ok2 {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
		if err != nil || !slices.Contains(strings.Fields(string(b)), controller) {
			return CgroupDir{}, fmt.Sprintf("%s: not delegated to the daemon's cgroup v2 %s (run it in a unit with Delegate=yes)", controller, dir)
		}
		if err := unix.Access(dir, unix.W_OK); err != nil {
			return CgroupDir{}, fmt.Sprintf("%s: the daemon's cgroup v2 %s is not writable (%v; run it in a unit with Delegate=yes)", controller, dir, err)
		}
		return CgroupDir{Dir: dir, Version: 2}, ""
	}
	return CgroupDir{}, fmt.Sprintf("%s: no cgroup hierarchy has the %s controller", controller, controller)
}

// v2Ready guards the one-time move of the daemon's processes into a leaf,
// per v2 directory: a v2 cgroup with processes may not enable controllers
// for its children ("no internal processes").
var v2Ready sync.Map // dir -> error

// newCgroups makes the cgroups named name under those of k's directories
// of cgroup version (1 or 2), and writes l's limits into them. On error
// none is left. One that exists already is a dead daemon's if stale says
// names like it are never any live child's (v1's, named for a pid): it is
// emptied and made anew; else it is an error.
func newCgroups(k Kernel, version int, name string, l Limits, stale bool) ([]cgroup, error) {
	var out []cgroup
	add := func(d CgroupDir, memory, pids bool) error {
		if d.Dir == "" || d.Version != version {
			return nil
		}
		if i := slices.IndexFunc(out, func(c cgroup) bool { return c.Dir == filepath.Join(d.Dir, name) }); i >= 0 {
			out[i].Memory, out[i].Pids = out[i].Memory || memory, out[i].Pids || pids
			return nil
		}
		if d.Version == 2 {
			if err := prepareV2(d.Dir); err != nil {
				return err
			}
		}
		c := cgroup{Dir: filepath.Join(d.Dir, name), Version: d.Version, Memory: memory, Pids: pids}
		err := os.Mkdir(c.Dir, 0o755)
		if errors.Is(err, os.ErrExist) && stale {
			// A dead daemon's, of an earlier process with this name:
			// its counters would be taken for this child's.
			if _, err = c.remove(); err == nil {
				err = os.Mkdir(c.Dir, 0o755)
			}
		}
		if err != nil {
			return fmt.Errorf("making cgroup: %w", err)
		}
		out = append(out, c)
		return nil
	}
	if err := add(k.Memory, true, false); err != nil {
		removeCgroups(out)
		return nil, err
	}
	if err := add(k.Pids, false, true); err != nil {
		removeCgroups(out)
		return nil, err
	}
	for _, c := range out {
		if err := c.limit(l); err != nil {
			removeCgroups(out)
			return nil, err
		}
	}
	return out, nil
}

// cgroupName is the name of the v1 cgroups of the child pid, made once it
// runs.
func cgroupName(pid int) string { return fmt.Sprintf("mcpx-%d", pid) }

// cloneSeq numbers the v2 cgroups, made before the child they hold.
var cloneSeq atomic.Uint64

// cloneToken tells this daemon's v2 cgroups from those of an earlier one
// with its pid: the daemon before an upgrade in place, whose children it
// adopted with their cgroups.
var cloneToken = sync.OnceValue(func() string { return rand.Text()[:8] })

// cloneName is the name of a v2 cgroup a child is cloned into: it is made
// before the child has a pid, so it is named for the daemon (its pid and
// token) and a count. One of that name that exists already is never taken
// for a dead daemon's (newCgroups): an adopted child may live in it.
func cloneName() string {
	return fmt.Sprintf("mcpx-%d-%s-%d", os.Getpid(), cloneToken(), cloneSeq.Add(1))
}

// prepareV2 readies the daemon's own v2 cgroup dir to hold children's
// cgroups with the memory and pids controllers: the daemon's processes
// move to the leaf dir/mcpx-daemon, and the controllers are enabled for
// dir's children. Once per dir and process.
func prepareV2(dir string) error {
	if err, ok := v2Ready.Load(dir); ok {
		return errOrNil(err)
	}
	err := enableV2(dir)
	v2Ready.Store(dir, err)
	return err
}

func errOrNil(v any) error {
	if v == nil {
		return nil
	}
	return v.(error)
}

func enableV2(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return err
	}
	avail := strings.Fields(string(b))
	enabled, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	var want []string
	for _, c := range []string{"memory", "pids"} {
		if slices.Contains(avail, c) && !slices.Contains(strings.Fields(string(enabled)), c) {
			want = append(want, "+"+c)
		}
	}
	if len(want) == 0 {
		return nil
	}
	if err := moveToLeaf(dir, filepath.Join(dir, "mcpx-daemon")); err != nil {
		return fmt.Errorf("moving the daemon's processes out of %s (cgroup v2 lets no cgroup with processes enable controllers for its children): %w", dir, err)
	}
	if err := writeFile(filepath.Join(dir, "cgroup.subtree_control"), strings.Join(want, " ")); err != nil {
		return fmt.Errorf("enabling %s for %s's children: %w", strings.Join(want, " "), dir, err)
	}
	return nil
}

// moveToLeaf moves every process of cgroup dir into leaf, looking again
// until dir has none (a process may fork meanwhile).
func moveToLeaf(dir, leaf string) error {
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	for range 50 {
		pids, err := readPids(filepath.Join(dir, "cgroup.procs"))
		if err != nil || len(pids) == 0 {
			return err
		}
		for _, pid := range pids {
			if err := writeFile(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(pid)); err != nil && !errors.Is(err, syscall.ESRCH) {
				return err
			}
		}
	}
	return fmt.Errorf("%s still has processes after 50 moves", dir)
}

// limit writes l into c.
func (c cgroup) limit(l Limits) error {
	var files [][2]string // name, value; written in order
	if c.Memory && l.Memory > 0 {
		m := strconv.FormatInt(l.Memory, 10)
		if c.Version == 1 {
			// memsw (memory+swap) must be at least the memory limit: set after it.
			files = append(files, [2]string{"memory.limit_in_bytes", m}, [2]string{"memory.memsw.limit_in_bytes?", m})
		} else {
			files = append(files, [2]string{"memory.max", m}, [2]string{"memory.swap.max?", "0"}, [2]string{"memory.oom.group?", "1"})
		}
	}
	if c.Pids && l.Processes > 0 {
		files = append(files, [2]string{"pids.max", strconv.Itoa(l.Processes)})
	}
	for _, f := range files {
		name, optional := strings.CutSuffix(f[0], "?")
		err := writeFile(filepath.Join(c.Dir, name), f[1])
		if optional && errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("limiting cgroup: %w", err)
		}
	}
	return nil
}

// joinCgroups moves pid (all its threads) into each of cs.
func joinCgroups(cs []cgroup, pid int) error {
	for _, c := range cs {
		if err := writeFile(filepath.Join(c.Dir, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("joining cgroup %s: %w", c.Dir, err)
		}
	}
	return nil
}

// selfJoins are the moves into the v1 cgroups cs the C stage makes
// itself: to a cgroup's tasks file, which moves the writing thread alone
// and spares the move the kernel's global lock (helper.Join). A v2
// cgroup has no such file outside threaded subtrees: the child is cloned
// into it instead (Cell.cloneInto).
func selfJoins(cs []cgroup) []helper.Join {
	var out []helper.Join
	for _, c := range cs {
		file := "tasks"
		var features []string
		if c.Memory {
			features = append(features, FeatureMemory)
		}
		if c.Pids {
			features = append(features, FeatureProcesses)
		}
		out = append(out, helper.Join{File: filepath.Join(c.Dir, file), Features: features})
	}
	return out
}

// readCounters reads the limit events of cs.
func readCounters(cs []cgroup) counters {
	var n counters
	for _, c := range cs {
		if c.Memory {
			if c.Version == 1 {
				n.OOMKills += keyed(filepath.Join(c.Dir, "memory.oom_control"), "oom_kill")
			} else {
				n.OOMKills += keyed(filepath.Join(c.Dir, "memory.events"), "oom_kill")
			}
		}
		if c.Pids {
			n.PidsMax += keyed(filepath.Join(c.Dir, "pids.events"), "max")
		}
	}
	return n
}

// keyed returns the value of key in a cgroup file of "key value" lines, 0
// if it is not there.
func keyed(file, key string) int {
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == key {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// removeCgroups kills what is left in cs and removes them. It returns
// how many processes it found left, and the first error.
func removeCgroups(cs []cgroup) (int, error) {
	var left int
	var first error
	for _, c := range cs {
		n, err := c.remove()
		left = max(left, n)
		if err != nil && first == nil {
			first = err
		}
	}
	return left, first
}

// remove kills every process in c (cgroup.kill where v2 has it, else one by
// one, looking again until none is left) and removes the directory.
func (c cgroup) remove() (left int, err error) {
	pids, err := readPids(filepath.Join(c.Dir, "cgroup.procs"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	left = len(pids)
	if c.Version == 2 {
		writeFile(filepath.Join(c.Dir, "cgroup.kill"), "1")
	}
	for range 250 {
		pids, err := readPids(filepath.Join(c.Dir, "cgroup.procs"))
		if errors.Is(err, os.ErrNotExist) {
			return left, nil
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if err := os.Remove(c.Dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return left, nil
		} else if !errors.Is(err, syscall.EBUSY) {
			return left, fmt.Errorf("removing cgroup: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return left, fmt.Errorf("removing cgroup %s: still busy after 5s", c.Dir)
}

func readPids(file string) ([]int, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out, nil
}

// writeFile writes s to an existing cgroup file.
func writeFile(name, s string) error {
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
