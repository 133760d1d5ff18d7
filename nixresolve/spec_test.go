package nixresolve

import (
	"strings"
	"testing"
)

func TestParseSpec(t *testing.T) {
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
		s, err := ParseSpec(c.in)
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", c.in, err)
			continue
		}
		if s.Ref != c.ref || s.Attr != c.attr {
			t.Errorf("ParseSpec(%q) = %+v, want ref %q attr %q", c.in, s, c.ref, c.attr)
		}
		if s.String() != c.in {
			t.Errorf("ParseSpec(%q).String() = %q", c.in, s.String())
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
		_, err := ParseSpec(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseSpec(%q) = %v, want an error containing %q", c.in, err, c.want)
		}
	}
	if IsSpec("/usr/bin/gopls") || !IsSpec("nix:nixpkgs#gopls") {
		t.Error("IsSpec: a plain command is not a spec, nix:… is")
	}
}

func TestAbsolute(t *testing.T) {
	for in, want := range map[string]string{
		"nix:.#demo":            "nix:/etc/mcpx#demo",
		"nix:./tools#x":         "nix:/etc/mcpx/tools#x",
		"nix:path:../f?dir=a#x": "nix:path:/etc/f?dir=a#x",
		"nix:git+file:.#x":      "nix:git+file:/etc/mcpx#x",
		"nix:path:/abs#x":       "nix:path:/abs#x",
		"nix:github:o/r#x":      "nix:github:o/r#x",
		"nix:nixpkgs#hello":     "nix:nixpkgs#hello",
	} {
		s, err := ParseSpec(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.absolute("/etc/mcpx").String(); got != want {
			t.Errorf("%s made absolute = %s, want %s", in, got, want)
		}
	}
}

func TestDrvName(t *testing.T) {
	for in, want := range map[string]string{"hello-2.12": "hello", "mcp-demo-1.0": "mcp-demo", "plain": "plain", "foo-bar-baz": "foo-bar-baz", "x-1": "x"} {
		if got := drvName(in); got != want {
			t.Errorf("drvName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNixMessage(t *testing.T) {
	in := "building '/nix/store/x-bad.drv'...\nerror: builder for '/nix/store/x-bad.drv' failed with exit code 3;\n       last 2 log lines:\n       > oops\n(use '--show-trace' to show detailed location information)\n"
	want := "error: builder for '/nix/store/x-bad.drv' failed with exit code 3;\n       last 2 log lines:\n       > oops"
	if got := nixMessage(in); got != want {
		t.Errorf("nixMessage = %q, want %q", got, want)
	}
}

func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"nix:path:/x#y", "nix:.#a", "nix:github:o/r", "nix:#", "gopls"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseSpec(in)
		if err != nil {
			return
		}
		again, err := ParseSpec(s.String())
		if err != nil || again != s {
			t.Fatalf("ParseSpec(%q) = %+v, but its String %q parses to %+v, %v", in, s, s.String(), again, err)
		}
	})
}
