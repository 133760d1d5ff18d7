package nixspec

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	good := []struct {
		in         string
		ref, attr  string
		normalized string
	}{
		{"nix:path:/src/tool#demo", "path:/src/tool", "demo", ""},
		{"nix:git+file:///src/tool#demo", "git+file:///src/tool", "demo", ""},
		{"nix:github:owner/repo/v1.2#server", "github:owner/repo/v1.2", "server", ""},
		{"nix:github:owner/repo", "github:owner/repo", "", ""},
		{"nix:.#demo", ".", "demo", ""},
		{"nix:./tools#x", "./tools", "x", ""},
		{"nix:/abs/flake#pkgs.x", "/abs/flake", "pkgs.x", ""},
		{"nix:nixpkgs#hello", "nixpkgs", "hello", ""},
		{"nix:nixpkgs/nixos-24.05#hello", "nixpkgs/nixos-24.05", "hello", ""},
		{"nix:git+https://example.com/r.git?ref=main#x", "git+https://example.com/r.git?ref=main", "x", ""},
	}
	for _, c := range good {
		s, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if s.Ref != c.ref || s.Attr != c.attr {
			t.Errorf("Parse(%q) = %+v, want ref %q attr %q", c.in, s, c.ref, c.attr)
		}
		if s.String() != c.in {
			t.Errorf("Parse(%q).String() = %q", c.in, s.String())
		}
	}
	bad := []struct{ in, want string }{
		{"gopls", "not a nix program spec"},
		{"nix:", "no flake reference"},
		{"nix:#demo", "no flake reference"},
		{"nix:path:/x#", "empty attribute"},
		{"nix:path:/x#a#b", "more than one '#'"},
		{"nix:githb:owner/repo#x", `unknown flake reference type "githb:"`},
		{"nix:github:#x", "has nothing after"},
		{"nix:path:/a b#x", "whitespace"},
		{"nix:tools/x y", "whitespace"},
		{"nix:~/flake#x", "neither a path"},
	}
	for _, c := range bad {
		_, err := Parse(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", c.in, err, c.want)
		}
	}
	if Is("/usr/bin/gopls") || !Is("nix:nixpkgs#gopls") {
		t.Error("Is: a plain command is not a spec, nix:… is")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"nix:path:/x#y", "nix:.#a", "nix:github:o/r", "nix:#", "gopls"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(in)
		if err != nil {
			return
		}
		again, err := Parse(s.String())
		if err != nil || again != s {
			t.Fatalf("Parse(%q) = %+v, but its String %q parses to %+v, %v", in, s, s.String(), again, err)
		}
	})
}
