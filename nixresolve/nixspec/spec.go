// Package nixspec is the grammar of the nix values a config may hold: a
// program spec (nix:<flakeref>[#attr]) as a server's command, and an
// execution environment (host, flake:<flakeref>[#attr], shell:<file>).
//
//	if nixspec.Is(command) {
//		s, err := nixspec.Parse(command) // s.Ref "github:owner/repo", s.Attr "tool"
//	}
//	e, err := nixspec.ParseEnvironment("flake:path:/src/app#dev")
//
// It parses and checks shape only; package mcpx.dev/mcpx/nixresolve runs
// nix. Standard library only, so the config checks specs without linking
// the resolver.
package nixspec

import (
	"fmt"
	"regexp"
	"strings"
)

// Prefix marks a program spec that names a flake output rather than a
// command on PATH.
const Prefix = "nix:"

// Spec is a parsed nix:<flakeref>[#<attr>] program spec.
type Spec struct {
	Ref  string // the flake reference, as written: "path:/src/tool", "github:o/r/v1", ".", "nixpkgs"
	Attr string // the attribute after '#'; "" = the flake's default package
}

// Is reports whether a command names a flake output (starts with
// "nix:"); anything else is a plain command looked up on PATH.
func Is(command string) bool { return strings.HasPrefix(command, Prefix) }

// refTypes are the flake reference schemes Nix 2.8 fetches. A ref with
// another scheme is refused at parse time, so a typo is a config error and
// not a nix error at the first spawn.
var refTypes = []string{
	"path", "git+file", "git+http", "git+https", "git+ssh", "github", "gitlab", "sourcehut",
	"hg+file", "hg+http", "hg+https", "hg+ssh", "tarball+file", "tarball+http", "tarball+https",
	"file+file", "file+http", "file+https", "http", "https", "file", "flake",
}

// registryName is an indirect ref: a flake registry entry ("nixpkgs",
// "nixpkgs/nixos-24.05").
var registryName = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]*(/[a-zA-Z0-9_.+-]+)*$`)

// Parse parses a nix:<flakeref>[#<attr>] program spec. Flake refs are
// checked only for shape (a known scheme, a path, or a registry name); nix
// itself judges the rest at resolution. A plain command is not a spec: use
// Is first.
func Parse(s string) (Spec, error) {
	if !Is(s) {
		return Spec{}, fmt.Errorf("%q is not a nix program spec: it does not start with %q", s, Prefix)
	}
	body := s[len(Prefix):]
	if strings.ContainsFunc(body, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return Spec{}, fmt.Errorf("program spec %q holds whitespace or a control character; write it as nix:<flakeref>#<attr>", s)
	}
	ref, attr, hasAttr := strings.Cut(body, "#")
	if ref == "" {
		return Spec{}, fmt.Errorf("program spec %q has no flake reference; write it as nix:<flakeref>#<attr>, e.g. nix:github:owner/repo#tool or nix:path:/src/tool#tool", s)
	}
	if hasAttr && attr == "" {
		return Spec{}, fmt.Errorf("program spec %q has an empty attribute after '#'; name the package (nix:%s#name) or drop the '#' for the default package", s, ref)
	}
	if strings.Contains(attr, "#") {
		return Spec{}, fmt.Errorf("program spec %q has more than one '#'", s)
	}
	if err := checkRef(ref); err != nil {
		return Spec{}, fmt.Errorf("program spec %q: %v", s, err)
	}
	return Spec{Ref: ref, Attr: attr}, nil
}

func checkRef(ref string) error {
	if isPathRef(ref) {
		return nil
	}
	if scheme, rest, ok := strings.Cut(ref, ":"); ok {
		for _, t := range refTypes {
			if scheme == t {
				if strings.TrimLeft(rest, "/") == "" {
					return fmt.Errorf("flake reference %q has nothing after %q", ref, scheme+":")
				}
				return nil
			}
		}
		return fmt.Errorf("unknown flake reference type %q; use path:, git+file:, git+https:, github:, gitlab:, tarball+https:, an absolute or ./relative path, or a registry name", scheme+":")
	}
	if !registryName.MatchString(ref) {
		return fmt.Errorf("flake reference %q is neither a path (absolute, or starting with ./ or ../), a URL-like ref (path:, github:, ...), nor a registry name", ref)
	}
	return nil
}

// isPathRef reports a bare path ref: ".", "..", "/abs", "./rel", "../rel".
func isPathRef(ref string) bool {
	return ref == "." || ref == ".." || strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, "./") || strings.HasPrefix(ref, "../")
}

// String is the spec as written in a config: nix:<ref>[#<attr>].
func (s Spec) String() string {
	if s.Attr == "" {
		return Prefix + s.Ref
	}
	return Prefix + s.Ref + "#" + s.Attr
}

// Installable is what nix commands take: <ref>[#<attr>].
func Installable(ref, attr string) string {
	if attr == "" {
		return ref
	}
	return ref + "#" + attr
}
