package api

import (
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// The broker's values as wire documents. wire is the contract: its
// documents say, with their JSON tags, what the API answers. The broker's
// values have no tags (broker.Caller aside, for now): they are never
// encoded as they are. Each document is built from them here or beside its
// handler (nixListDoc, sessionDoc, ...), explicitly, member by member;
// TestDocuments pins the JSON each converter gives for a value with every
// field set.

func callerDoc(c broker.Caller) wire.Caller {
	return wire.Caller{Name: c.Name, Via: c.Via, Uid: c.Uid, Local: c.Local, Owner: c.Owner, Admin: c.Rights.Admin(),
		Rights: orNone(c.Rights)}
}

// orNone writes rights that allow nothing as [], never null.
func orNone(r rights.Rights) rights.Rights {
	if r == nil {
		return rights.None()
	}
	return r
}

func serverDoc(si broker.ServerInfo) wire.Server {
	return wire.Server{Name: si.Name, Description: si.Description, Tags: si.Tags, Transport: si.Transport,
		Scope: string(si.Scope), Sharing: string(si.Sharing), Max: si.Max, Instances: si.Instances,
		ToolTags: si.ToolTags, Prelude: si.Prelude}
}

func statsDoc(s broker.Stats) *wire.Stats {
	return &wire.Stats{Spawns: s.Spawns, Restarts: s.Restarts, StartFailures: s.StartFailures, Crashes: s.Crashes,
		Wedged: s.Wedged, Evictions: s.Evictions, Reaps: s.Reaps, Exhausted: s.Exhausted, Queued: s.Queued, Waits: s.Waits}
}

func instanceDoc(in broker.Instance) wire.Instance {
	return wire.Instance{
		ID: in.ID, Server: in.Server, Key: in.Key, Root: in.Root,
		Cwd: in.Cwd, CwdSource: string(in.CwdSource), Transport: in.Transport, Pid: in.Pid,
		State: string(in.State), Protocol: in.Protocol, Created: in.Created, Started: in.Started, LastUsed: in.LastUsed,
		Calls: in.Calls, InFlight: in.InFlight, Restarts: in.Restarts, BackoffUntil: in.BackoffUntil,
		LastError: in.LastError, StderrTail: in.StderrTail, Degraded: in.Degraded,
		Program: programDoc(in), Exec: in.Exec,
		Index: in.Index, Alloc: in.Alloc, TmpDir: in.TmpDir,
		Sandbox: instanceSandboxDoc(in),
	}
}

func programDoc(in broker.Instance) *wire.InstanceProgram {
	p := in.Program
	if p == nil {
		return nil
	}
	return &wire.InstanceProgram{Spec: p.Spec, Rev: p.Rev, NarHash: p.NarHash, StorePath: p.StorePath,
		Pinned: p.Pinned, Environment: p.Environment, EnvironmentRev: p.EnvRev}
}
