package registry

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"mcpx.dev/mcpx/internal/orderedjson"
)

// The kinds of entry Add writes: a package's registryType, or KindRemote.
const (
	KindNPM    = "npm"
	KindPyPI   = "pypi"
	KindOCI    = "oci"
	KindNuGet  = "nuget"
	KindNix    = "nix" // mcpx's own: the official registry has none
	KindMCPB   = "mcpb"
	KindRemote = "remote"
)

// launchers are the commands the package kinds run with, and how to get
// each (the pool's words when one is missing at spawn say the same).
var launchers = map[string]string{
	KindNPM:   "node",
	KindPyPI:  "uvx",
	KindOCI:   "docker",
	KindNuGet: "dnx",
}

// choice is what of a server.json an entry runs: one package or one remote.
type choice struct {
	kind   string
	pkg    *Package   // nil for a remote
	remote *Transport // nil for a package
}

// choose picks what to run: the first package or remote of kind use ("" =
// the first mcpx can run, packages first, in the server.json's order).
func choose(s *ServerJSON, use string) (choice, error) {
	var kinds []string
	for i := range s.Packages {
		p := &s.Packages[i]
		kinds = append(kinds, p.RegistryType)
		if use == p.RegistryType || (use == "" && runnable(p.RegistryType)) {
			return choice{kind: p.RegistryType, pkg: p}, nil
		}
	}
	for i := range s.Remotes {
		r := &s.Remotes[i]
		kinds = append(kinds, KindRemote+" ("+r.Type+")")
		if (use == KindRemote || use == "") && r.Type == "streamable-http" {
			return choice{kind: KindRemote, remote: r}, nil
		}
	}
	for i := range s.Remotes {
		if use == KindRemote || use == "" {
			return choice{}, fmt.Errorf("%s's remote %s is %s: mcpx speaks streamable HTTP only, and an SSE endpoint would fail every call", s.Name, s.Remotes[i].URL, s.Remotes[i].Type)
		}
	}
	if len(kinds) == 0 {
		return choice{}, fmt.Errorf("%s@%s has neither packages nor remotes: nothing to run", s.Name, s.Version)
	}
	if use != "" {
		return choice{}, fmt.Errorf("%s@%s has no %s; it has %s", s.Name, s.Version, use, strings.Join(kinds, ", "))
	}
	return choice{}, fmt.Errorf("%s@%s has only %s, which mcpx cannot run (mcpb bundles are not unpacked)", s.Name, s.Version, strings.Join(kinds, ", "))
}

func runnable(kind string) bool { return launchers[kind] != "" || kind == KindNix }

// build is the config entry of c, with program the npm package's bin
// (an installed file; "" for other kinds).
func build(s *ServerJSON, c choice, program string, vs *values) (*orderedjson.Object, error) {
	e := newObject()
	if s.Description != "" {
		e.set("description", s.Description)
	}
	if c.remote != nil {
		return remoteEntry(e, c.remote, vs)
	}
	p := c.pkg
	if t := p.Transport.Type; t != "" && t != "stdio" {
		return nil, fmt.Errorf("%s's %s package serves %s at %s; mcpx starts packages over stdio only: add its remote (--use remote) if it has one, or run it yourself and add a url server", s.Name, p.RegistryType, t, p.Transport.URL)
	}
	version := p.Version
	if version == "" || version == "latest" {
		if p.RegistryType != KindOCI && p.RegistryType != KindNix {
			return nil, fmt.Errorf("%s's %s package %s names no exact version (%q); mcpx pins what it adds", s.Name, p.RegistryType, p.Identifier, p.Version)
		}
	}
	env := envOf(p.EnvironmentVariables, vs, "env")
	rt := argsOf(p.RuntimeArguments, vs)
	pa := argsOf(p.PackageArguments, vs)
	var command string
	var args []string
	switch p.RegistryType {
	case KindNPM:
		command, args = launchers[KindNPM], append([]string{program}, pa...)
	case KindPyPI:
		command, args = launchers[KindPyPI], slices.Concat(rt, []string{p.Identifier + "==" + version}, pa)
	case KindOCI:
		command = launchers[KindOCI]
		args = []string{"run", "-i", "--rm"}
		for _, k := range env.Keys {
			args = append(args, "-e", k) // docker passes the entry's env on
		}
		args = slices.Concat(args, rt, []string{image(p.Identifier, version)}, pa)
	case KindNuGet:
		command, args = launchers[KindNuGet], slices.Concat([]string{p.Identifier + "@" + version, "--yes"}, rt)
		if len(pa) > 0 {
			args = append(append(args, "--"), pa...)
		}
	case KindNix:
		command, args = "nix:"+p.Identifier, pa
	default:
		return nil, fmt.Errorf("%s's package type %q is not one mcpx runs (npm, pypi, oci, nuget, nix)", s.Name, p.RegistryType)
	}
	e.set("command", command)
	if len(args) > 0 {
		e.set("args", anys(args))
	}
	if len(env.Keys) > 0 {
		e.set("env", env.Object)
	}
	if confinable[p.RegistryType] {
		e.set("sandbox", true)
	}
	return e.Object, nil
}

// confinable are the kinds whose entries Add confines ("sandbox": true;
// docs/sandbox.md): an npm package installed in the state directory runs
// from there with node, a nix package from its store closure, and neither
// needs the network or the home directory. The launchers of the others
// fetch at run time into the user's caches (uvx, dnx) or talk to a
// container engine's socket (docker), which a default sandbox refuses: the
// owner confines those by hand, with the hosts they need. A caller who is
// not the owner gets a confined child of every kind all the same.
var confinable = map[string]bool{KindNPM: true, KindNix: true}

func remoteEntry(e object, r *Transport, vs *values) (*orderedjson.Object, error) {
	u := vs.substitute(r.URL, r.Variables, "url")
	if braced.MatchString(u) {
		return nil, fmt.Errorf("remote url %s keeps a {variable} no value was given for", u)
	}
	e.set("url", u)
	if h := envOf(r.Headers, vs, "header"); len(h.Keys) > 0 {
		e.set("headers", h.Object)
	}
	return e.Object, nil
}

// image is an OCI reference pinned to version, unless the identifier
// already carries a tag or digest.
func image(id, version string) string {
	last := id[strings.LastIndex(id, "/")+1:]
	if strings.Contains(last, ":") || strings.Contains(last, "@") || version == "" {
		return id
	}
	return id + ":" + version
}

// envOf resolves environment variables or headers (where says which)
// into an object.
func envOf(kvs []KeyValueInput, vs *values, where string) object {
	o := newObject()
	for _, kv := range kvs {
		if v, ok := vs.resolve(Variable{Key: kv.Name, Where: where + " " + kv.Name, Input: kv.Input}); ok {
			o.set(kv.Name, v)
		}
	}
	return o
}

// argsOf resolves arguments: a positional one as its value, a named one
// as its flag then its value (the flag alone when it has none).
func argsOf(as []Argument, vs *values) []string {
	var out []string
	for i, a := range as {
		switch a.Type {
		case "named":
			key := strings.TrimLeft(a.Name, "-")
			v, ok := vs.resolve(Variable{Key: key, Where: "argument " + a.Name, Input: a.Input})
			if !ok {
				continue
			}
			out = append(out, a.Name)
			if v != "" {
				out = append(out, v)
			}
		default: // positional
			key := a.ValueHint
			if key == "" {
				key = fmt.Sprintf("arg%d", i+1)
			}
			if v, ok := vs.resolve(Variable{Key: key, Where: "argument " + key, Input: a.Input}); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// object is an orderedjson.Object built member by member.
type object struct{ *orderedjson.Object }

func newObject() object {
	return object{&orderedjson.Object{Vals: map[string]any{}}}
}

func (o object) set(k string, v any) {
	if !o.Has(k) {
		o.Keys = append(o.Keys, k)
	}
	o.Vals[k] = v
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// Way is one way to run a server: a package or a remote, with the inputs
// it takes (Variable.Key is what --env names).
type Way struct {
	Kind   string // a registryType, or KindRemote
	What   string // identifier@version (transport), or the remote's type and URL
	Inputs []Variable
}

// Ways lists the ways s can run, in its order: packages, then remotes.
func Ways(s *ServerJSON) []Way {
	var ways []Way
	for i := range s.Packages {
		p := &s.Packages[i]
		vs := &values{collect: true}
		build(s, choice{kind: p.RegistryType, pkg: p}, "", vs) //nolint:errcheck // only the inputs are wanted
		what := p.Identifier
		if p.Version != "" {
			what += "@" + p.Version
		}
		ways = append(ways, Way{Kind: p.RegistryType, What: what + " (" + cmp.Or(p.Transport.Type, "stdio") + ")", Inputs: vs.seen})
	}
	for i := range s.Remotes {
		r := &s.Remotes[i]
		vs := &values{collect: true}
		remoteEntry(newObject(), r, vs) //nolint:errcheck // only the inputs are wanted
		ways = append(ways, Way{Kind: KindRemote, What: r.Type + " " + r.URL, Inputs: vs.seen})
	}
	return ways
}
