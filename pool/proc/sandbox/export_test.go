package sandbox

import "testing"

// WithoutMPTCPFilter leaves out, for t, the seccomp filter against
// Multipath TCP: to see what Landlock's TCP rules alone leave open.
func WithoutMPTCPFilter(t testing.TB) {
	mptcpFilter = false
	t.Cleanup(func() { mptcpFilter = true })
}

// WithKernel changes, for t, what Probe found (to start children without
// cgroups, say).
func WithKernel(t testing.TB, f func(*Kernel)) {
	old := Probe()
	k := old
	f(&k)
	probed = k
	t.Cleanup(func() { probed = old })
}

// WithNamespaceStage starts, for t, the Go helper through path instead
// of the unshare Probe found (an unshare that fails, say; "": cloned into
// its namespaces).
func WithNamespaceStage(t testing.TB, path string) {
	Probe()
	WithGoStage(t)
	old := nsStage
	nsStage = path
	t.Cleanup(func() { nsStage = old })
}

// WithGoStage makes, for t, the helper the Go one, started as in a
// binary built without cgo (through unshare, or cloned).
func WithGoStage(t testing.TB) {
	goStage = true
	t.Cleanup(func() { goStage = false })
}

// OwnCgroupV2 is this process's own cgroup v2 directory, "" if there is
// no v2 hierarchy (whatever its controllers).
func OwnCgroupV2() string {
	mountinfo, self, err := cgroupFS{}.read()
	if err != nil {
		return ""
	}
	path, ok := ownCgroup(self, "")
	for _, m := range parseMountinfo(mountinfo) {
		if m.version != 2 || !ok {
			continue
		}
		if dir, ok := m.dir(path); ok {
			return dir
		}
	}
	return ""
}
