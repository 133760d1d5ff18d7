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

// WithNamespaceStage starts, for t, the helper through path instead of
// the unshare Probe found (an unshare that fails, say).
func WithNamespaceStage(t testing.TB, path string) {
	Probe()
	old := nsStage
	nsStage = path
	t.Cleanup(func() { nsStage = old })
}
