package api

import (
	"cmp"
	"net/http"
	"slices"
	"strings"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// getSandbox says what would confine the child that serves the caller
// at its cwd (`mcpx sandbox show`).
func (s *server) getSandbox(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	v, err := s.b.Sandbox(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sandboxFor(req.Caller, v))
	return nil
}

// sandboxFor is v as caller c may see it: what the child may read, and
// its environment's names, are the owner's (they name the owner's
// programs and files).
func sandboxFor(c broker.Caller, v broker.SandboxView) wire.Sandbox {
	doc := sandboxDoc(v)
	if !c.Owner {
		doc.Read, doc.Env = nil, nil
	}
	return doc
}

func sandboxDoc(v broker.SandboxView) wire.Sandbox {
	doc := wire.Sandbox{Server: v.Server, Key: v.Key, Root: v.Root, Confined: v.Spec != nil}
	if v.Spec == nil {
		return doc
	}
	p := v.Policy
	doc.Why, doc.Fingerprint, doc.Mode = v.Spec.Why, v.Spec.Fingerprint(), string(v.Enforcement.Mode)
	doc.Read, doc.Write = slices.Clone(p.Read), slices.Clone(p.Write)
	doc.Network, doc.Allow = string(v.Spec.Network), slices.Clone(v.Spec.Allow)
	for _, port := range p.ConnectTCP {
		doc.Ports = append(doc.Ports, int(port))
	}
	for _, kv := range p.Env {
		name, _, _ := strings.Cut(kv, "=")
		doc.Env = append(doc.Env, name)
	}
	slices.Sort(doc.Env)
	l := wire.SandboxLimits{Memory: p.Limits.Memory, Processes: p.Limits.Processes, OpenFiles: p.Limits.OpenFiles}
	if p.Limits.CPU > 0 {
		l.CPU = p.Limits.CPU.String()
	}
	doc.Limits = &l
	for _, f := range v.Enforcement.Features {
		doc.Enforcement = append(doc.Enforcement, wire.SandboxFeature{Name: f.Name, Needed: f.Needed, Enforced: f.Enforced, By: f.By, Why: f.Why})
	}
	doc.Refused = v.Refused
	return doc
}

// instanceSandboxDoc is what confines in's children; nil when nothing does.
func instanceSandboxDoc(in broker.Instance) *wire.InstanceSandbox {
	sb := in.Sandbox
	if sb == nil {
		return nil
	}
	doc := &wire.InstanceSandbox{Fingerprint: sb.Fingerprint, Why: sb.Why, Mode: cmp.Or(string(sb.Spec.Mode), "enforce"),
		Network: cmp.Or(string(sb.Spec.Network), "none"), Limit: sb.Limit}
	for _, f := range sb.Enforcement.Features {
		doc.Enforcement = append(doc.Enforcement, wire.SandboxFeature{Name: f.Name, Needed: f.Needed, Enforced: f.Enforced, By: f.By, Why: f.Why})
	}
	return doc
}
