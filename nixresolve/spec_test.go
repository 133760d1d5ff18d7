package nixresolve

import (
	"testing"

	"mcpx.dev/mcpx/nixresolve/nixspec"
)

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
		s, err := nixspec.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := absolute(s, "/etc/mcpx").String(); got != want {
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
