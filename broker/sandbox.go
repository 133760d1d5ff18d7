package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/placeholder"
	"mcpx.dev/mcpx/pool/confine"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// EffectiveSandbox is what confines the child of server s (its config,
// with the config's defaults d) that serves caller c at root ("" for a
// rootless scope); nil means an unconfined child. It is the one rule of
// who is confined (docs/sandbox.md):
//
//   - the owner's calls are confined when the server's "sandbox" says so,
//     or, when it says nothing, the defaults' do ("defaults": {"sandbox":
//     true}); "sandbox": false opts the owner out;
//   - a caller who is not the owner (a tailnet grant, a token) is always
//     confined, whatever the config says (with its settings where it has
//     some), in Enforce mode, and its child may write only within the
//     roots the caller's rights allow for the server: a configured write
//     path outside them is dropped, never widened to;
//   - only command servers and CLI adapters start processes to confine
//     (a url server's child runs elsewhere; an OpenAPI adapter's requests
//     go from the daemon itself, to its document's server); a CLI
//     adapter's every command is confined as a child would be.
//
// The child may write its root and ${mcpx.tmpdir}; it may read what it
// needs to run (package confine) and the root. Read and write lists of
// the server and the defaults add up; the server's other fields win over
// the defaults', which win over the built-in ones (no network,
// confine.DefaultLimits). It reads nothing but its arguments.
func EffectiveSandbox(s *config.Server, d config.Defaults, c Caller, root string) *confine.Spec {
	if s == nil || s.OpenAPI != nil || s.Command == "" && s.CLI == nil {
		return nil
	}
	why, set := confine.WhyConfig, s.Sandbox
	if set == nil {
		why, set = confine.WhyDefaults, d.Sandbox
	}
	if !c.Owner {
		why = confine.WhyCaller
	} else if !set.On() {
		return nil
	}
	m := mergeSandbox(s.Sandbox, d.Sandbox)
	spec := &confine.Spec{Why: why, Mode: sandbox.Enforce, Limits: limitsOf(m.Limits)}
	if m.Mode == config.SandboxBestEffort && c.Owner {
		spec.Mode = sandbox.BestEffort
	}
	if root != "" {
		spec.Write = append(spec.Write, root)
	}
	spec.Read = appendPaths(spec.Read, m.Read, root)
	spec.Write = appendPaths(spec.Write, m.Write, root)
	if !c.Owner {
		spec.Write = withinRights(spec.Write, c, s.Name)
	}
	switch m.Network.Kind {
	case config.NetworkHosts:
		spec.Network, spec.Allow = sandbox.NetworkProxy, slices.Clone(m.Network.Hosts)
	case config.NetworkLoopback:
		spec.Network = sandbox.NetworkLoopback
		for _, p := range m.Ports {
			spec.Ports = append(spec.Ports, uint16(p))
		}
	case config.NetworkAll:
		spec.Network = sandbox.NetworkAll
	default:
		spec.Network = sandbox.NetworkNone
	}
	return spec
}

// mergeSandbox is the server's setting over the defaults': lists added
// up, the server's other fields winning. A setting that is off (false)
// or absent contributes nothing.
func mergeSandbox(server, def *config.Sandbox) config.Sandbox {
	var m config.Sandbox
	for _, s := range []*config.Sandbox{def, server} { // the server's last: it wins
		if !s.On() {
			continue
		}
		m.Read = append(m.Read, s.Read...)
		m.Write = append(m.Write, s.Write...)
		if s.Mode != "" {
			m.Mode = s.Mode
		}
		if !s.Network.IsZero() {
			m.Network = s.Network
		}
		if len(s.Ports) > 0 {
			m.Ports = s.Ports
		}
		l := s.Limits
		if l.Memory != nil {
			m.Limits.Memory = l.Memory
		}
		if l.Processes != nil {
			m.Limits.Processes = l.Processes
		}
		if l.OpenFiles != nil {
			m.Limits.OpenFiles = l.OpenFiles
		}
		if l.CPU != nil {
			m.Limits.CPU = l.CPU
		}
	}
	return m
}

// limitsOf are l over confine.DefaultLimits: a field set (0 too) wins.
func limitsOf(l config.SandboxLimits) sandbox.Limits {
	out := confine.DefaultLimits
	if l.Memory != nil {
		out.Memory = int64(*l.Memory)
	}
	if l.Processes != nil {
		out.Processes = *l.Processes
	}
	if l.OpenFiles != nil {
		out.OpenFiles = *l.OpenFiles
	}
	if l.CPU != nil {
		out.CPU = l.CPU.D()
	}
	return out
}

// appendPaths adds paths to out with ${mcpx.root} made root; a path under
// ${mcpx.root} is dropped for a rootless scope. ${mcpx.tmpdir} is left
// for the spawn (confine.Spec.Policy).
func appendPaths(out, paths []string, root string) []string {
	for _, p := range paths {
		if rest, ok := strings.CutPrefix(p, placeholder.Root); ok {
			if root == "" {
				continue
			}
			p = filepath.Join(root, rest)
		} else if !strings.HasPrefix(p, placeholder.TmpDir) {
			p = filepath.Clean(p)
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// withinRights keeps of paths those c's rights let it work in for
// server, and the instance's private directory.
func withinRights(paths []string, c Caller, server string) []string {
	roots, anywhere := c.Rights.RootsOf(server)
	if anywhere {
		return paths
	}
	var out []string
	for _, p := range paths {
		if strings.HasPrefix(p, placeholder.TmpDir) || slices.ContainsFunc(roots, func(r string) bool { return within(p, r) }) {
			out = append(out, p)
		}
	}
	return out
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// confineSetting is what of s's config and the defaults decides its
// children's confinement, as the pool compares definitions
// (pool.Server.Confine): "" when neither says anything, so that the
// definitions of servers that never mention a sandbox are what they were.
func confineSetting(s *config.Server, d config.Defaults) string {
	if s.Sandbox == nil && d.Sandbox == nil {
		return ""
	}
	b, _ := json.Marshal([]*config.Sandbox{s.Sandbox, d.Sandbox})
	return string(b)
}

// SandboxView is what would confine the child that serves a request: its
// server, for its caller at its cwd (`mcpx sandbox show`).
type SandboxView struct {
	Server string
	Key    string // the scope key the caller's calls land on
	Root   string // the instance root; "" for a rootless scope
	// Spec is what the broker decided (EffectiveSandbox); nil when the
	// child is not confined, and then nothing below is set.
	Spec *confine.Spec
	// Policy is the whole policy a spawn would make of it now: the
	// private directory named ${mcpx.tmpdir}, allocated ports unknown.
	Policy sandbox.Policy
	// Enforcement is what this kernel would enforce of it, feature by
	// feature (sandbox.Plan); Refused says why Enforce mode would refuse
	// to start the child here ("" if it would not).
	Enforcement sandbox.Enforcement
	Refused     string
}

// Sandbox says what would confine the child that serves r, without
// starting it (resolving a nix: command may build it, within ctx).
func (b *Broker) Sandbox(ctx context.Context, r Request) (SandboxView, error) {
	res, err := b.resolve(r)
	if err != nil {
		return SandboxView{}, err
	}
	v := SandboxView{Server: r.Server, Key: res.target.Key, Root: res.target.Root, Spec: res.target.Sandbox}
	if v.Spec == nil {
		return v, nil
	}
	if v.Policy, err = b.pool.SandboxPolicy(ctx, res.target); err != nil {
		return SandboxView{}, b.translate(err, "show sandbox", r.Server)
	}
	var ne *sandbox.NotEnforcedError
	if v.Enforcement, err = sandbox.Plan(&v.Policy, sandbox.Probe()); errors.As(err, &ne) {
		v.Refused = fmt.Sprintf("server %q: sandbox: %v", r.Server, ne)
	}
	return v, nil
}
