package api

import (
	"net/http"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// The nix routes name commands, store paths and GC roots of the daemon's
// machine, and refresh and gc change what runs: admins only.
func checkNixAdmin(r *http.Request, what string) error {
	if c, _ := callerFrom(r.Context()); !c.Rights.Admin() {
		return &broker.Error{Kind: broker.KindForbidden, Op: what, Msg: "only an admin may " + what}
	}
	return nil
}

func (s *server) listNix(w http.ResponseWriter, r *http.Request) error {
	if err := checkNixAdmin(r, "list nix programs"); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, nixListDoc(s.b.NixList()))
	return nil
}

// nixListDoc is ls as GET /v1/nix answers it.
func nixListDoc(ls broker.NixList) wire.NixList {
	out := wire.NixList{Servers: []wire.NixServer{}, Unreferenced: []wire.NixProgram{}, UnreferencedEnvironments: []wire.NixEnvironment{}}
	for _, ns := range ls.Servers {
		doc := wire.NixServer{Server: ns.Server, Spec: ns.Spec, Pinned: ns.Pinned, Environment: ns.Environment}
		if ns.Resolved {
			p := nixProgramDoc(ns.Program)
			doc.Program = &p
		}
		if ns.Captured {
			e := nixEnvironmentDoc(ns.Env)
			doc.Env = &e
		}
		out.Servers = append(out.Servers, doc)
	}
	for _, e := range ls.Unreferenced {
		out.Unreferenced = append(out.Unreferenced, nixProgramDoc(e))
	}
	for _, d := range ls.UnreferencedEnvironments {
		out.UnreferencedEnvironments = append(out.UnreferencedEnvironments, nixEnvironmentDoc(d))
	}
	return out
}

func (s *server) refreshNix(w http.ResponseWriter, r *http.Request) error {
	if err := checkNixAdmin(r, "refresh a nix command"); err != nil {
		return err
	}
	res, err := s.b.NixRefresh(r.Context(), param(r, "server"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, nixRefreshedDoc(res))
	return nil
}

// nixRefreshedDoc is res as POST /v1/nix/refresh/{server} answers it.
func nixRefreshedDoc(res broker.NixRefreshed) wire.NixRefreshed {
	out := wire.NixRefreshed{Server: res.Server, Current: nixProgramDoc(res.Current),
		Changed: res.Changed, Replaced: res.Replaced, Environment: res.Environment, EnvironmentChanged: res.EnvironmentChanged}
	if res.Previous.Path != "" {
		p := nixProgramDoc(res.Previous)
		out.Previous = &p
	}
	return out
}

func (s *server) gcNix(w http.ResponseWriter, r *http.Request) error {
	if err := checkNixAdmin(r, "clean the nix cache"); err != nil {
		return err
	}
	dropped, err := s.b.NixGC()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, nixGCDoc(dropped))
	return nil
}

// nixGCDoc is what a gc dropped, as POST /v1/nix/gc answers it.
func nixGCDoc(dropped []broker.NixProgram) wire.NixGC {
	out := wire.NixGC{Dropped: []wire.NixProgram{}}
	for _, p := range dropped {
		out.Dropped = append(out.Dropped, nixProgramDoc(p))
	}
	return out
}

func nixProgramDoc(p broker.NixProgram) wire.NixProgram {
	return wire.NixProgram{Spec: p.Spec, Path: p.Path, StorePath: p.StorePath,
		LockedURL: p.Locked.URL, Rev: p.Locked.Rev, NarHash: p.Locked.NarHash, LastModified: p.Locked.LastModified,
		Root: p.Root, ResolvedAt: p.ResolvedAt, Pinned: p.Pinned}
}

func nixEnvironmentDoc(d broker.NixEnvironment) wire.NixEnvironment {
	return wire.NixEnvironment{Environment: d.Environment, LockedURL: d.Locked.URL, Rev: d.Locked.Rev,
		NarHash: d.Locked.NarHash, LastModified: d.Locked.LastModified, FileHash: d.FileHash,
		Variables: len(d.Vars), Root: d.Root, CapturedAt: d.CapturedAt}
}
