package nixspec

import (
	"errors"
	"fmt"
	"strings"
)

// Execution environments: a server's environment key.
const (
	EnvHost  = "host"   // the daemon's own environment (the default)
	EnvFlake = "flake:" // flake:<flakeref>[#attr]: the flake's devShell
	EnvShell = "shell:" // shell:<file>: a legacy shell.nix
	// EnvIsolated is an environment holding only its packages: the
	// config's "isolated" (with the server's dependencies), and the form
	// the daemon hands around, "isolated:<spec> <spec>…", with its
	// packages' nix: specs (Isolated).
	EnvIsolated = "isolated"
)

// Environment is a parsed execution environment.
type Environment struct {
	Kind string // EnvHost, EnvFlake, EnvShell or EnvIsolated
	// Ref is, for flake:, the flake reference; for shell:, the file; for
	// isolated, its packages' nix: specs joined by spaces (Packages).
	Ref  string
	Attr string // flake: the attribute after '#'; "" = the devShell nix print-dev-env picks
}

// ParseEnvironment parses an environment value: "" or "host",
// "flake:<flakeref>[#attr]" (a flake's devShell) or "shell:<file>" (a
// legacy shell.nix; an absolute path, or one relative to
// nixresolve.Options.Dir), "isolated" or "isolated:<spec> <spec>…" (only
// the packages of those nix: specs; see Isolated).
func ParseEnvironment(s string) (Environment, error) {
	switch {
	case s == "" || s == EnvHost:
		return Environment{Kind: EnvHost}, nil
	case strings.HasPrefix(s, EnvFlake):
		sp, err := Parse(Prefix + s[len(EnvFlake):])
		if err != nil {
			msg := strings.ReplaceAll(err.Error(), "program spec", "environment")
			msg = strings.ReplaceAll(msg, `"`+Prefix, `"`+EnvFlake)
			msg = strings.ReplaceAll(msg, Prefix+"<flakeref>#<attr>", EnvFlake+"<flakeref>#<attr>")
			msg = strings.ReplaceAll(msg, " "+Prefix, " "+EnvFlake) // the examples
			return Environment{}, errors.New(msg)
		}
		return Environment{Kind: EnvFlake, Ref: sp.Ref, Attr: sp.Attr}, nil
	case strings.HasPrefix(s, EnvShell):
		file := s[len(EnvShell):]
		if file == "" || strings.ContainsFunc(file, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return Environment{}, fmt.Errorf("environment %q names no file, or holds a control character; write shell:/path/to/shell.nix", s)
		}
		return Environment{Kind: EnvShell, Ref: file}, nil
	case s == EnvIsolated:
		return Environment{Kind: EnvIsolated}, nil
	case strings.HasPrefix(s, EnvIsolated+":"):
		specs := strings.Split(s[len(EnvIsolated)+1:], " ")
		for _, sp := range specs {
			if _, err := Parse(sp); err != nil {
				return Environment{}, fmt.Errorf("environment %q: %w", s, err)
			}
		}
		return Environment{Kind: EnvIsolated, Ref: strings.Join(specs, " ")}, nil
	}
	return Environment{}, fmt.Errorf("unknown environment %q; use %q (the default), %q (a devShell), %q (a legacy shell.nix) or %q (only the declared nix: packages)",
		s, EnvHost, EnvFlake+"<flakeref>[#attr]", EnvShell+"<file>", EnvIsolated)
}

// String is the environment as written in a config.
func (e Environment) String() string {
	switch e.Kind {
	case EnvFlake:
		return EnvFlake + Installable(e.Ref, e.Attr)
	case EnvShell:
		return EnvShell + e.Ref
	case EnvIsolated:
		return Isolated(e.Packages())
	}
	return EnvHost
}

// Packages are an isolated environment's nix: specs, in order.
func (e Environment) Packages() []string {
	if e.Kind != EnvIsolated {
		return nil
	}
	return strings.Fields(e.Ref)
}

// Isolated is the environment holding only the packages of specs (nix:
// program specs, which hold no whitespace), in order: earlier wins where
// two provide one program. No specs is an environment holding nothing.
func Isolated(specs []string) string {
	if len(specs) == 0 {
		return EnvIsolated
	}
	return EnvIsolated + ":" + strings.Join(specs, " ")
}
