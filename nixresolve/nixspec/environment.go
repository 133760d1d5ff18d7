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
)

// Environment is a parsed execution environment.
type Environment struct {
	Kind string // EnvHost, EnvFlake or EnvShell
	Ref  string // flake: the flake reference; shell: the file
	Attr string // flake: the attribute after '#'; "" = the devShell nix print-dev-env picks
}

// ParseEnvironment parses an environment value: "" or "host",
// "flake:<flakeref>[#attr]" (a flake's devShell) or "shell:<file>" (a
// legacy shell.nix; an absolute path, or one relative to
// nixresolve.Options.Dir).
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
	}
	return Environment{}, fmt.Errorf("unknown environment %q; use %q (the default), %q (a devShell) or %q (a legacy shell.nix)",
		s, EnvHost, EnvFlake+"<flakeref>[#attr]", EnvShell+"<file>")
}

// String is the environment as written in a config.
func (e Environment) String() string {
	switch e.Kind {
	case EnvFlake:
		return EnvFlake + Installable(e.Ref, e.Attr)
	case EnvShell:
		return EnvShell + e.Ref
	}
	return EnvHost
}
