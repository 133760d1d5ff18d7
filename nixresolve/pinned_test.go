package nixresolve

import "testing"

func TestPinnedSpec(t *testing.T) {
	for spec, want := range map[string]bool{
		"nix:github:o/r/0123456789abcdef0123456789abcdef01234567#x": true,
		"nix:gitlab:o/r/0123456789abcdef0123456789abcdef01234567":   true,
		"nix:github:o/r/v1.2#x":             false,
		"nix:github:o/r#x":                  false,
		"nix:github:o/r/0123456789abcdef#x": false,
		"nix:git+https://example.com/r?ref=main&rev=0123456789abcdef0123456789abcdef01234567#x": true,
		"nix:git+file:///src/r?ref=main#x":                false,
		"nix:path:/src/tool?narHash=sha256-abc#x":         true,
		"nix:path:/src/tool#x":                            false,
		"nix:tarball+https://example.com/t.tar.gz?rev=#x": false,
		"nix:nixpkgs#hello":                               false,
		"not a spec":                                      false,
	} {
		if got := pinnedSpec(spec); got != want {
			t.Errorf("pinnedSpec(%q) = %v, want %v", spec, got, want)
		}
	}
}
