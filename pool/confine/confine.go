// Package confine turns what the broker decided about a confined child
// into the sandbox.Policy it starts with. The broker decides, per caller,
// whether and how an instance's child is confined (a Spec: extra paths,
// network, limits, mode); the pool finishes the Spec at each spawn with
// what only the spawn knows: the instance's private directory, its
// program and its package, its environment and its ports.
//
//	spec := &confine.Spec{Why: confine.WhyCaller, Write: []string{root}, Limits: confine.DefaultLimits}
//	reads := confine.ProgramReads("/usr/bin/node", []string{"node", "/srv/x/index.js"}, root)
//	p := spec.Policy(confine.Facts{TmpDir: tmp, Program: reads, Env: env, Base: os.Environ()})
//	cell, err := sandbox.Prepare(cmd, p)
//
// The rules of what a confined child gets (docs/sandbox.md):
//
//   - read: the system's libraries and programs and /etc basics
//     (sandbox.SystemRead), the program and its package (ProgramReads),
//     for a Go program the toolchain and the module cache (GoToolchain),
//     Spec.Read; never a home directory, the daemon's state directory or
//     another worktree unless one of those names it;
//   - write: Spec.Write (the instance root, for scopes that have one),
//     the instance's private directory, the usual devices
//     (sandbox.Devices);
//   - environment: exactly the server's own variables (Facts.Env) over
//     PATH and LANG from the daemon's, HOME and TMPDIR set to the
//     private directory, and, for a host list, the proxy variables;
//     nothing else of the daemon's environment;
//   - network and limits: the Spec's.
//
// A Spec's Fingerprint is part of the instance's identity: two callers
// whose Specs differ never share a child.
package confine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"mcpx.dev/mcpx/internal/defaults"
	"mcpx.dev/mcpx/internal/placeholder"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// Why a child is confined.
const (
	WhyConfig   = "config"   // the server's own "sandbox"
	WhyDefaults = "defaults" // the config's "defaults": {"sandbox": ...}
	WhyCaller   = "caller"   // the caller is not the daemon's owner
)

// Spec is a confined child's policy before its instance's facts are in:
// what the broker decided for one caller of one server at one root. It is
// JSON: it is handed over with the child across an upgrade or a crash.
type Spec struct {
	// Why says why the child is confined (WhyConfig, WhyDefaults,
	// WhyCaller), for status. It is no part of the Fingerprint.
	Why string `json:"why"`
	// Mode is what to do when the kernel cannot enforce something.
	Mode sandbox.Mode `json:"mode,omitempty"`
	// Read and Write are absolute paths the child may read, and read and
	// write, beyond what it needs to run; they may begin with
	// ${mcpx.tmpdir}, which Policy substitutes. The instance root is in
	// Write for scopes that have one.
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
	// Network is what the child may reach: sandbox.NetworkProxy with
	// Allow (the egress proxy's allowlist), NetworkLoopback with Ports
	// (beside the instance's allocations, Facts.Ports), NetworkNone or
	// NetworkAll.
	Network sandbox.Network `json:"network"`
	Allow   []string        `json:"allow,omitempty"`
	Ports   []uint16        `json:"ports,omitempty"`
	// Limits bound the child and everything it starts.
	Limits sandbox.Limits `json:"limits,omitzero"`
}

// DefaultLimits are what a confined child may use when nothing says
// otherwise: room for gopls on a large module and for node's heap, no
// CPU-time limit (RLIMIT_CPU adds up over a long-lived server's life and
// would end it some day for no fault of its own).
var DefaultLimits = sandbox.Limits{
	Memory:    defaults.SandboxMemory,
	Processes: defaults.SandboxProcesses,
	OpenFiles: defaults.SandboxOpenFiles,
}

// Fingerprint is a stable hash of what s lets a child do: the same for
// two Specs that differ only in Why, order or repeats; "" for nil (an
// unconfined child, whose instance keeps the key it always had).
func (s *Spec) Fingerprint() string {
	if s == nil {
		return ""
	}
	c := *s
	c.Why = ""
	c.Read, c.Write, c.Allow = sortedSet(c.Read), sortedSet(c.Write), sortedSet(c.Allow)
	c.Ports = sortedSet(c.Ports)
	if c.Mode == "" {
		c.Mode = sandbox.Enforce
	}
	if c.Network == "" {
		c.Network = sandbox.NetworkNone
	}
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // a Spec always marshals
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func sortedSet[T string | uint16](s []T) []T {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// Facts are what a spawn knows that the Spec does not.
type Facts struct {
	// TmpDir is the instance's private directory: writable, and the
	// child's HOME and TMPDIR.
	TmpDir string
	// Program are the paths the program needs to read: its executable,
	// its package (ProgramReads), a nix program's store closure.
	Program []string
	// Env is the server's own environment, KEY=VALUE, substituted: set
	// over the base variables.
	Env []string
	// Base is the daemon's environment: PATH and LANG are taken from it,
	// nothing else.
	Base []string
	// Ports are the instance's allocated ports (${mcpx.alloc.*}), which
	// the child may bind and connect to under NetworkLoopback.
	Ports []uint16
}

// ProxyEnv are the variables that point a child's HTTP clients at the
// egress proxy on its own loopback (NetworkProxy). NODE_USE_ENV_PROXY
// makes node's own fetch (undici, from node 24; earlier ones ignore it)
// honour them; NO_PROXY keeps its loopback direct.
func ProxyEnv(port uint16) []string {
	u := "http://127.0.0.1:" + strconv.Itoa(int(port))
	return []string{
		"HTTPS_PROXY=" + u, "https_proxy=" + u, "HTTP_PROXY=" + u, "http_proxy=" + u,
		"NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1",
		"NODE_USE_ENV_PROXY=1",
	}
}

// Policy is s finished with f: the whole policy a spawn starts its child
// with (the pool's mark is added to Env by package proc). Paths that do not
// exist are left in: the sandbox allows nothing for them.
func (s *Spec) Policy(f Facts) sandbox.Policy {
	sub := func(p string) string {
		if rest, ok := strings.CutPrefix(p, placeholder.TmpDir); ok {
			return filepath.Clean(f.TmpDir + "/" + rest)
		}
		return filepath.Clean(p)
	}
	p := sandbox.Policy{Network: s.Network, Mode: s.Mode, Limits: s.Limits}
	p.Read = append(p.Read, sandbox.SystemRead()...)
	for _, r := range slices.Concat(f.Program, s.Read) {
		p.Read = append(p.Read, sub(r))
	}
	for _, w := range s.Write {
		p.Write = append(p.Write, sub(w))
	}
	if f.TmpDir != "" {
		p.Write = append(p.Write, f.TmpDir)
	}
	p.Write = append(p.Write, sandbox.Devices()...)
	p.Read, p.Write = sortedSet(p.Read), sortedSet(p.Write)
	if s.Network == sandbox.NetworkLoopback {
		ports := sortedSet(slices.Concat(s.Ports, f.Ports))
		p.ConnectTCP, p.BindTCP = ports, ports
	}
	p.Env = env(s, f)
	return p
}

// env is the child's whole environment: PATH and LANG of the base, HOME
// and TMPDIR, the proxy's variables, then the server's own over them
// (but the proxy's, which the server cannot move).
func env(s *Spec, f Facts) []string {
	vars := map[string]string{}
	var order []string
	set := func(kv string) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return
		}
		if _, seen := vars[k]; !seen {
			order = append(order, k)
		}
		vars[k] = v
	}
	for _, kv := range f.Base {
		if k, _, _ := strings.Cut(kv, "="); k == "PATH" || k == "LANG" {
			set(kv)
		}
	}
	if f.TmpDir != "" {
		set("HOME=" + f.TmpDir)
		set("TMPDIR=" + f.TmpDir)
	}
	for _, kv := range f.Env {
		set(kv)
	}
	if s.Network == sandbox.NetworkProxy {
		for _, kv := range ProxyEnv(sandbox.DefaultProxyPort) {
			set(kv)
		}
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vars[k])
	}
	return out
}

// Check says what in s cannot be: a path that is neither absolute nor
// under ${mcpx.tmpdir}; nil if nothing.
func (s *Spec) Check() error {
	for _, set := range [][]string{s.Read, s.Write} {
		for _, p := range set {
			rest, under := strings.CutPrefix(p, placeholder.TmpDir)
			if !under && !filepath.IsAbs(p) || under && rest != "" && !strings.HasPrefix(rest, "/") {
				return fmt.Errorf("sandbox path %q is not absolute", p)
			}
		}
	}
	return nil
}
