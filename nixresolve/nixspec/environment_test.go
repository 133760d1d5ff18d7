package nixspec

import (
	"strings"
	"testing"
)

// TestParseEnvironment: host (also ""), a flake's devShell and a
// shell.nix parse and print back as written; a bad one is refused with a
// message in the environment's own terms (flake:, not nix:).
func TestParseEnvironment(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Environment
	}{
		{"", Environment{Kind: EnvHost}},
		{"host", Environment{Kind: EnvHost}},
		{"flake:path:/src/app#dev", Environment{Kind: EnvFlake, Ref: "path:/src/app", Attr: "dev"}},
		{"flake:github:o/r", Environment{Kind: EnvFlake, Ref: "github:o/r"}},
		{"shell:/src/app/shell.nix", Environment{Kind: EnvShell, Ref: "/src/app/shell.nix"}},
		{"shell:shell.nix", Environment{Kind: EnvShell, Ref: "shell.nix"}},
		{"isolated", Environment{Kind: EnvIsolated}},
		{"isolated:nix:nixpkgs#jq nix:./tools#x", Environment{Kind: EnvIsolated, Ref: "nix:nixpkgs#jq nix:./tools#x"}},
	} {
		e, err := ParseEnvironment(c.in)
		if err != nil || e != c.want {
			t.Errorf("ParseEnvironment(%q) = %+v, %v; want %+v", c.in, e, err, c.want)
			continue
		}
		if c.in != "" && e.String() != c.in {
			t.Errorf("ParseEnvironment(%q).String() = %q", c.in, e.String())
		}
	}
	for in, want := range map[string]string{
		"docker:ubuntu":            `unknown environment "docker:ubuntu"`,
		"flake:githb:o/r":          `environment "flake:githb:o/r": unknown flake reference type "githb:"`,
		"flake:":                   `environment "flake:" has no flake reference; write it as flake:<flakeref>#<attr>, e.g. flake:github:owner/repo#tool or flake:path:/src/tool#tool`,
		"flake:path:/x#":           "empty attribute",
		"shell:":                   "names no file",
		"shell:/a\x01.nix":         "control character",
		"isolated:":                `environment "isolated:": "" is not a nix program spec`,
		"isolated:nix:a  nix:b":    `"" is not a nix program spec`,
		"isolated:nixpkgs#jq":      `"nixpkgs#jq" is not a nix program spec`,
		"isolated:nix:githb:o/r#x": `unknown flake reference type "githb:"`,
	} {
		if _, err := ParseEnvironment(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseEnvironment(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}

func FuzzParseEnvironment(f *testing.F) {
	for _, s := range []string{"host", "isolated:nix:nixpkgs#jq nix:.#x", "flake:.#dev", "flake:github:o/r", "shell:/x/shell.nix", "shell:", "flake:#"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		e, err := ParseEnvironment(in)
		if err != nil {
			return
		}
		again, err := ParseEnvironment(e.String())
		if err != nil || again != e {
			t.Fatalf("ParseEnvironment(%q) = %+v, but its String %q parses to %+v, %v", in, e, e.String(), again, err)
		}
	})
}
