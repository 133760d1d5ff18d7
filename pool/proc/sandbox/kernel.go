package sandbox

import (
	"fmt"
	"strings"
	"sync"
)

// Kernel is what this machine's kernel can enforce for a confined child,
// as Probe found it.
type Kernel struct {
	// OS is runtime.GOOS; containment is Linux-only.
	OS string `json:"os"`
	// Landlock is the Landlock ABI version the kernel offers (after the
	// errata check, landlockABI), 0 when it offers none; LandlockWhy says why.
	Landlock    int    `json:"landlock"`
	LandlockWhy string `json:"landlockWhy,omitempty"`
	// Namespaces reports whether the daemon may start a child in a user
	// namespace of its own with a network namespace in it; NamespacesWhy
	// says why not.
	Namespaces    bool   `json:"namespaces"`
	NamespacesWhy string `json:"namespacesWhy,omitempty"`
	// Memory and Pids are where a child's memory and pids cgroups are made,
	// zero when no such cgroup is writable here; CgroupWhy says why not.
	Memory    CgroupDir `json:"memory,omitzero"`
	Pids      CgroupDir `json:"pids,omitzero"`
	CgroupWhy string    `json:"cgroupWhy,omitempty"`
	// Root reports whether the daemon runs as uid 0, which RLIMIT_NPROC
	// does not bind.
	Root bool `json:"root"`
}

// CgroupDir is a writable cgroup directory under which the daemon makes
// one cgroup per child.
type CgroupDir struct {
	// Dir is the directory, the daemon's own cgroup of that controller
	// (v2: the daemon's own cgroup, its processes moved to a leaf).
	Dir string `json:"dir"`
	// Version is the cgroup hierarchy's version, 1 or 2.
	Version int `json:"version"`
}

func (d CgroupDir) String() string {
	if d.Dir == "" {
		return "none"
	}
	return fmt.Sprintf("cgroup v%d %s", d.Version, d.Dir)
}

var (
	probeOnce sync.Once
	probed    Kernel
)

// Probe returns what this kernel can enforce. It looks once per process
// (the namespace check starts a process that fails to exec) and returns
// the same answer after.
func Probe() Kernel {
	probeOnce.Do(func() { probed = probe() })
	return probed
}

// Report lists what k can enforce, feature by feature, for `mcpx doctor`:
// Enforced says whether this kernel can, By with what, Why what not.
func (k Kernel) Report() []Feature {
	if k.OS != "linux" {
		return []Feature{{Name: "containment", Why: "containment is Linux-only; this is " + k.OS}}
	}
	p := Policy{Limits: Limits{Memory: 1, Processes: 1, OpenFiles: 1, CPU: 1}, Mode: BestEffort}
	fs := plan(&p, k).Features
	loop := Policy{Network: NetworkLoopback, Mode: BestEffort}
	for _, f := range plan(&loop, k).Features {
		if f.Name == FeatureNetwork {
			f.Name = "network (host, by port)"
			fs = append(fs, f)
		}
	}
	for i := range fs {
		fs[i].Needed = false
	}
	return fs
}

// String is k in one line, for logs.
func (k Kernel) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s landlock=%d namespaces=%t memory=%s pids=%s root=%t", k.OS, k.Landlock, k.Namespaces, k.Memory, k.Pids, k.Root)
	return b.String()
}
