package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Policy is the effective, fully resolved confinement of one child: every
// path absolute, every variable expanded, nothing left to a default that
// could change under it. It is JSON (it crosses to the helper on a file
// descriptor and into the daemon's hand-over state), and its Fingerprint
// is part of the child's identity: two callers whose policies differ never
// share a child.
type Policy struct {
	// Read are the files and directories the child may read and execute,
	// each with everything beneath it. The program itself must be here (or
	// under Write), or its exec is refused.
	Read []string `json:"read,omitempty"`
	// Write are the files and directories the child may read, write,
	// create in, remove from, execute, and rename or link within and
	// between them (Landlock's "refer"), each with everything beneath it.
	Write []string `json:"write,omitempty"`
	// Network is what the child may reach; the zero value is NetworkNone.
	Network Network `json:"network,omitempty"`
	// ProxyPort is the port of the listener the helper makes on the
	// child's own loopback under NetworkProxy, the one the child's
	// HTTPS_PROXY must name; zero means DefaultProxyPort.
	ProxyPort uint16 `json:"proxyPort,omitempty"`
	// ConnectTCP and BindTCP are the TCP ports the child may connect to
	// and bind under NetworkLoopback, on any address (Landlock rules are
	// per port). Empty means none. Ignored under the other networks.
	ConnectTCP []uint16 `json:"connectTCP,omitempty"`
	BindTCP    []uint16 `json:"bindTCP,omitempty"`
	// UnixSockets lets the child make unix sockets (socket(2) with
	// AF_UNIX) where Landlock cannot confine their connections, below ABI
	// 9: it could then connect to any pathname socket it can name, an ssh
	// agent's, a container engine's, the daemon's own. False, the zero
	// value, refuses such sockets there with a seccomp filter (socketpair(2)
	// stays allowed); from ABI 9 on Landlock confines them either way.
	UnixSockets bool `json:"unixSockets,omitempty"`
	// Env is the child's whole environment, KEY=value each; nothing of
	// the daemon's own environment reaches the child but what is here.
	Env []string `json:"env"`
	// Limits bound what the child and everything it starts may use.
	Limits Limits `json:"limits,omitzero"`
	// Mode says what to do when the kernel cannot enforce something the
	// policy needs; the zero value is Enforce.
	Mode Mode `json:"mode,omitempty"`
}

// Network is what a confined child may reach over the network.
type Network string

const (
	// NetworkNone: a private network namespace with only its own loopback,
	// nothing listening on it but what the child starts. The zero value.
	NetworkNone Network = "none"
	// NetworkProxy: like NetworkNone, plus a listener on the child's own
	// 127.0.0.1:ProxyPort that the daemon's egress proxy serves
	// (Cell.Listener). The only way out is through the proxy.
	NetworkProxy Network = "proxy"
	// NetworkLoopback: the host's network, with TCP connect and bind
	// limited by Landlock to ConnectTCP and BindTCP. Landlock rules name
	// ports, not addresses, and below ABI 10 leave UDP alone: this is
	// weaker than a namespace (see the package doc).
	NetworkLoopback Network = "loopback"
	// NetworkAll: the host's network, unrestricted.
	NetworkAll Network = "all"
)

// DefaultProxyPort is the port of the child's proxy listener when
// Policy.ProxyPort is zero.
const DefaultProxyPort = 3128

// Mode is what Prepare does when the kernel lacks a feature the policy needs.
type Mode string

const (
	// Enforce refuses to start the child, with an error naming the
	// missing feature. The zero value.
	Enforce Mode = "enforce"
	// BestEffort starts the child with what the kernel offers and says in
	// the Enforcement what was not enforced.
	BestEffort Mode = "best-effort"
)

// Limits bound a child and everything it starts. A zero field is no limit.
type Limits struct {
	// Memory is the most memory, in bytes, the child's processes may use
	// together (a memory cgroup), or each may map as data (RLIMIT_DATA)
	// where no memory cgroup is writable.
	Memory int64 `json:"memory,omitempty"`
	// Processes is the most processes and threads the child may have at
	// once, itself included (a pids cgroup; RLIMIT_NPROC where none is
	// writable and the daemon is not root).
	Processes int `json:"processes,omitempty"`
	// OpenFiles is each process's most open files (RLIMIT_NOFILE).
	OpenFiles int `json:"openFiles,omitempty"`
	// CPU is each process's most CPU time (RLIMIT_CPU), in whole seconds,
	// rounded up: SIGXCPU at the limit, SIGKILL a second later.
	CPU time.Duration `json:"cpu,omitempty"`
}

// network is p.Network with the zero value resolved.
func (p *Policy) network() Network {
	if p.Network == "" {
		return NetworkNone
	}
	return p.Network
}

// mode is p.Mode with the zero value resolved.
func (p *Policy) mode() Mode {
	if p.Mode == "" {
		return Enforce
	}
	return p.Mode
}

// proxyPort is p.ProxyPort with the zero value resolved.
func (p *Policy) proxyPort() uint16 {
	if p.ProxyPort == 0 {
		return DefaultProxyPort
	}
	return p.ProxyPort
}

// privateNetwork reports whether the child gets a network namespace of its own.
func (p *Policy) privateNetwork() bool {
	n := p.network()
	return n == NetworkNone || n == NetworkProxy
}

// Validate reports the first thing wrong with p, naming the field and the
// fix: relative or unclean paths, unknown network or mode, a malformed or
// repeated environment variable, negative limits.
func (p *Policy) Validate() error {
	for _, set := range []struct {
		name  string
		paths []string
	}{{"read", p.Read}, {"write", p.Write}} {
		for i, path := range set.paths {
			if err := checkPath(path); err != nil {
				return fmt.Errorf("sandbox policy: %s[%d] %q %v", set.name, i, path, err)
			}
		}
	}
	switch p.network() {
	case NetworkNone, NetworkProxy, NetworkLoopback, NetworkAll:
	default:
		return fmt.Errorf("sandbox policy: network %q is not one of none, proxy, loopback, all", p.Network)
	}
	switch p.mode() {
	case Enforce, BestEffort:
	default:
		return fmt.Errorf("sandbox policy: mode %q is not one of enforce, best-effort", p.Mode)
	}
	if err := checkEnv(p.Env); err != nil {
		return err
	}
	return p.Limits.validate()
}

// checkPath says why path cannot be a Landlock rule's path, nil if it can.
func checkPath(path string) error {
	switch {
	case !filepath.IsAbs(path):
		return fmt.Errorf("is not absolute: resolve it (and ${mcpx.root}, ${mcpx.tmpdir}) before building the policy")
	case filepath.Clean(path) != path:
		return fmt.Errorf("is not clean: use %q", filepath.Clean(path))
	}
	return nil
}

func checkEnv(env []string) error {
	seen := map[string]bool{}
	for i, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		switch {
		case !ok || k == "":
			return fmt.Errorf("sandbox policy: env[%d] %q is not KEY=value", i, kv)
		case seen[k]:
			return fmt.Errorf("sandbox policy: env sets %s twice: keep one", k)
		case k == envHelper || k == envUnshare || k == envGoStage:
			return fmt.Errorf("sandbox policy: env sets %s, which the sandbox's own helper reads: remove it", k)
		}
		seen[k] = true
	}
	return nil
}

func (l Limits) validate() error {
	switch {
	case l.Memory < 0:
		return fmt.Errorf("sandbox policy: limits.memory %d is negative: use 0 for no limit", l.Memory)
	case l.Processes < 0:
		return fmt.Errorf("sandbox policy: limits.processes %d is negative: use 0 for no limit", l.Processes)
	case l.OpenFiles < 0:
		return fmt.Errorf("sandbox policy: limits.openFiles %d is negative: use 0 for no limit", l.OpenFiles)
	case l.CPU < 0:
		return fmt.Errorf("sandbox policy: limits.cpu %v is negative: use 0 for no limit", l.CPU)
	}
	return nil
}

// cpuSeconds is l.CPU in whole seconds, rounded up; 0 for no limit.
func (l Limits) cpuSeconds() uint64 {
	if l.CPU <= 0 {
		return 0
	}
	return uint64((l.CPU + time.Second - 1) / time.Second)
}

// canonical returns p with its zero values resolved and its sets sorted
// and without repeats: what Fingerprint hashes.
func (p Policy) canonical() Policy {
	p.Read = sortedSet(p.Read)
	p.Write = sortedSet(p.Write)
	p.Env = sortedSet(p.Env)
	p.Network, p.Mode = p.network(), p.mode()
	if p.Network == NetworkProxy {
		p.ProxyPort = p.proxyPort()
	} else {
		p.ProxyPort = 0
	}
	if p.Network == NetworkLoopback {
		p.ConnectTCP, p.BindTCP = sortedSet(p.ConnectTCP), sortedSet(p.BindTCP)
	} else {
		p.ConnectTCP, p.BindTCP = nil, nil
	}
	return p
}

func sortedSet[T string | uint16](s []T) []T {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// Fingerprint is a stable hash of p's meaning: the same for two policies
// that differ only in order, repeats or spelled-out defaults, different
// for any change in what the child may do.
func (p Policy) Fingerprint() string {
	b, err := json.Marshal(p.canonical())
	if err != nil {
		panic(err) // a Policy always marshals
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}
