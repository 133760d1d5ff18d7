package sandbox

import (
	"fmt"
	"os"
	"strings"
)

// The features of a confinement, as named in an Enforcement.
const (
	FeatureFilesystem    = "filesystem"     // Policy.Read and Policy.Write: Landlock
	FeatureNetwork       = "network"        // Policy.Network: a network namespace, or Landlock TCP ports
	FeatureIPC           = "ipc"            // signals, abstract unix sockets, ptrace: Landlock scopes
	FeatureUnixSockets   = "unix-sockets"   // connect to pathname unix sockets: Landlock ABI 9, or seccomp
	FeatureUserNamespace = "user-namespace" // user and IPC namespaces of its own: how the daemon tells a confined peer
	FeatureCapabilities  = "capabilities"   // none held, even as root
	FeatureNoNewPrivs    = "no-new-privs"   // no setuid or file capabilities
	FeatureMemory        = "memory"         // Limits.Memory
	FeatureProcesses     = "processes"      // Limits.Processes
	FeatureOpenFiles     = "open-files"     // Limits.OpenFiles
	FeatureCPU           = "cpu"            // Limits.CPU
	FeatureCoreDumps     = "core-dumps"     // none written
)

// Feature is one part of a confinement and whether it holds. It names the
// mechanism; the amounts (ports, bytes, counts) are the Policy's.
type Feature struct {
	Name string `json:"name"`
	// Needed reports whether the policy asks for it: Enforce mode refuses
	// to start a child when a needed feature is not enforced.
	Needed bool `json:"needed,omitempty"`
	// Enforced reports whether the kernel enforces it for this child.
	Enforced bool `json:"enforced"`
	// By names what enforces it ("Landlock ABI 7", "memory cgroup v1").
	By string `json:"by,omitempty"`
	// Why says why it is not enforced, or what it leaves open if it is.
	Why string `json:"why,omitempty"`
}

func (f Feature) String() string {
	s := f.Name + ": "
	switch {
	case f.Enforced:
		s += "enforced by " + f.By
	case f.Needed:
		s += "NOT enforced"
	default:
		s += "not enforced"
	}
	if f.Why != "" {
		s += " (" + f.Why + ")"
	}
	return s
}

// Enforcement says, feature by feature, what confines a child: for
// `mcpx status`, `mcpx sandbox show` and `mcpx doctor`.
type Enforcement struct {
	Mode     Mode      `json:"mode"`
	Features []Feature `json:"features"`
}

// Feature returns the feature named name.
func (e Enforcement) Feature(name string) (Feature, bool) {
	for _, f := range e.Features {
		if f.Name == name {
			return f, true
		}
	}
	return Feature{}, false
}

// Missing returns the features the policy needs that are not enforced.
func (e Enforcement) Missing() []Feature {
	var out []Feature
	for _, f := range e.Features {
		if f.Needed && !f.Enforced {
			out = append(out, f)
		}
	}
	return out
}

// String is one line per feature.
func (e Enforcement) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mode: %s\n", e.Mode)
	for _, f := range e.Features {
		b.WriteString(f.String() + "\n")
	}
	return b.String()
}

func (e *Enforcement) set(name string, f func(*Feature)) {
	for i := range e.Features {
		if e.Features[i].Name == name {
			f(&e.Features[i])
		}
	}
}

// NotEnforcedError is Prepare's error in Enforce mode when the kernel
// cannot enforce what the policy needs.
type NotEnforcedError struct {
	Missing []Feature
}

func (e *NotEnforcedError) Error() string {
	var parts []string
	for _, f := range e.Missing {
		parts = append(parts, f.Name+" ("+f.Why+")")
	}
	return "sandbox: this kernel cannot enforce " + strings.Join(parts, ", ") +
		`; set "sandbox" to "best-effort" to start it with what the kernel can enforce`
}

// Plan returns what the kernel k would enforce for a child confined by p,
// and, in Enforce mode, a *NotEnforcedError when something p needs cannot
// be. It starts nothing: for `mcpx sandbox show`.
func Plan(p *Policy, k Kernel) (Enforcement, error) {
	e := plan(p, k)
	if m := e.Missing(); len(m) > 0 && e.Mode == Enforce {
		return e, &NotEnforcedError{Missing: m}
	}
	return e, nil
}

func plan(p *Policy, k Kernel) Enforcement {
	e := Enforcement{Mode: p.mode()}
	if k.OS != "linux" {
		for _, name := range []string{FeatureFilesystem, FeatureNetwork, FeatureIPC, FeatureUserNamespace, FeatureMemory, FeatureProcesses, FeatureOpenFiles, FeatureCPU} {
			e.Features = append(e.Features, Feature{Name: name, Needed: true, Why: "containment is Linux-only; this is " + k.OS})
		}
		return e
	}
	e.Features = append(e.Features,
		planFilesystem(k), planNetwork(p, k), planIPC(k), planUnixSockets(p, k), planUserNamespace(k),
		Feature{Name: FeatureCapabilities, Needed: true, Enforced: true, By: "bounding set emptied, no root privileges on exec"},
		Feature{Name: FeatureNoNewPrivs, Needed: true, Enforced: true, By: "PR_SET_NO_NEW_PRIVS"},
		planMemory(p.Limits, k), planProcesses(p.Limits, k))
	e.Features = append(e.Features, planRlimit(FeatureOpenFiles, p.Limits.OpenFiles > 0, "RLIMIT_NOFILE per process"))
	e.Features = append(e.Features, planRlimit(FeatureCPU, p.Limits.CPU > 0, "RLIMIT_CPU per process"))
	e.Features = append(e.Features, Feature{Name: FeatureCoreDumps, Enforced: true, By: "RLIMIT_CORE 0"})
	return e
}

func noLandlock(k Kernel) string {
	if k.LandlockWhy != "" {
		return k.LandlockWhy
	}
	return "the kernel offers no Landlock"
}

func planFilesystem(k Kernel) Feature {
	f := Feature{Name: FeatureFilesystem, Needed: true}
	if k.Landlock < 1 {
		f.Why = noLandlock(k)
		return f
	}
	f.Enforced, f.By = true, fmt.Sprintf("Landlock ABI %d", k.Landlock)
	switch {
	case k.Landlock < 3:
		f.Why = "truncation is not restricted below Landlock ABI 3"
	case k.Landlock < 5:
		f.Why = "ioctl on devices is not restricted below Landlock ABI 5"
	}
	return f
}

func planNetwork(p *Policy, k Kernel) Feature {
	f := Feature{Name: FeatureNetwork, Needed: true}
	switch p.network() {
	case NetworkNone, NetworkProxy:
		if !k.Namespaces {
			f.Why = k.NamespacesWhy
			return f
		}
		f.Enforced, f.By = true, "a network namespace of its own: its loopback only"
		if p.network() == NetworkProxy {
			f.By += fmt.Sprintf(", the egress proxy on its 127.0.0.1:%d", p.proxyPort())
		}
	case NetworkLoopback:
		if k.Landlock < 4 {
			f.Why = fmt.Sprintf("TCP rules need Landlock ABI 4; this kernel has %d", k.Landlock)
			if k.Landlock == 0 {
				f.Why = noLandlock(k)
			}
			return f
		}
		f.Enforced = true
		f.By = fmt.Sprintf("Landlock ABI %d TCP rules: connect and bind only to the policy's ports", k.Landlock)
		f.Why = "the host's network: any address on those ports; Multipath TCP refused by a seccomp filter"
		if k.Landlock < 10 {
			f.Why += "; UDP is not restricted below Landlock ABI 10"
		}
	case NetworkAll:
		f.Needed, f.Why = false, "the policy allows every network"
	}
	return f
}

func planIPC(k Kernel) Feature {
	f := Feature{Name: FeatureIPC, Needed: true}
	switch {
	case k.Landlock >= 6:
		f.Enforced = true
		f.By = fmt.Sprintf("Landlock ABI %d: signals, abstract unix sockets and ptrace only within its own domain", k.Landlock)
	case k.Landlock >= 1:
		f.Why = fmt.Sprintf("ptrace is confined, but signals and abstract unix sockets need Landlock ABI 6; this kernel has %d", k.Landlock)
	default:
		f.Why = noLandlock(k)
	}
	return f
}

func planUnixSockets(p *Policy, k Kernel) Feature {
	f := Feature{Name: FeatureUnixSockets, Needed: !p.UnixSockets}
	switch {
	case k.Landlock >= 9:
		f.Enforced, f.By = true, fmt.Sprintf("Landlock ABI %d (resolve_unix)", k.Landlock)
	case !p.UnixSockets:
		f.Enforced, f.By = true, "a seccomp filter: no unix socket of its own (socketpair allowed)"
		f.Why = fmt.Sprintf("Landlock ABI %d cannot confine connections to pathname unix sockets (ABI 9 can)", k.Landlock)
	default:
		f.Why = fmt.Sprintf("the policy allows unix sockets, and Landlock ABI %d cannot confine their connections (ABI 9 can): the child can connect to any pathname socket it can name", k.Landlock)
		if k.Namespaces {
			f.Why += "; the daemon tells it by its user namespace"
		}
	}
	return f
}

func planUserNamespace(k Kernel) Feature {
	f := Feature{Name: FeatureUserNamespace, Needed: true}
	if !k.Namespaces {
		f.Why = k.NamespacesWhy
		return f
	}
	f.Enforced, f.By = true, fmt.Sprintf("user and IPC namespaces of its own, uid %d and gid %d mapped to themselves", os.Geteuid(), os.Getegid())
	return f
}

func planMemory(l Limits, k Kernel) Feature {
	f := Feature{Name: FeatureMemory}
	if l.Memory <= 0 {
		f.Why = "no limit asked"
		return f
	}
	f.Needed, f.Enforced = true, true
	if k.Memory.Dir != "" {
		f.By = fmt.Sprintf("memory cgroup v%d", k.Memory.Version)
		return f
	}
	f.By = "RLIMIT_DATA per process"
	f.Why = "no writable memory cgroup (" + k.CgroupWhy + "): each process's data mappings are limited instead of the memory all use"
	return f
}

func planProcesses(l Limits, k Kernel) Feature {
	f := Feature{Name: FeatureProcesses}
	if l.Processes <= 0 {
		f.Why = "no limit asked"
		return f
	}
	f.Needed = true
	switch {
	case k.Pids.Dir != "":
		f.Enforced, f.By = true, fmt.Sprintf("pids cgroup v%d", k.Pids.Version)
	case k.Root:
		f.Why = "RLIMIT_NPROC does not bind uid 0 and no pids cgroup is writable (" + k.CgroupWhy + ")"
	case k.Namespaces:
		f.Enforced, f.By = true, "RLIMIT_NPROC, counted in its own user namespace"
	default:
		f.Enforced, f.By = true, "RLIMIT_NPROC"
		f.Why = fmt.Sprintf("without a user namespace it counts every process of uid %d, not only the child's", os.Geteuid())
	}
	return f
}

func planRlimit(name string, asked bool, by string) Feature {
	if !asked {
		return Feature{Name: name, Why: "no limit asked"}
	}
	return Feature{Name: name, Needed: true, Enforced: true, By: by}
}

// FormatBytes is n in the largest binary unit that divides it ("1GiB",
// "64MiB", "1500B").
func FormatBytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}
