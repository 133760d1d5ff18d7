package proc_test

import (
	"slices"
	"testing"

	"mcpx.dev/mcpx/pool/proc"
)

// TestEnvironPath: a devShell's PATH goes before the daemon's; an isolated
// environment's replaces it, even for a server that inherits everything.
func TestEnvironPath(t *testing.T) {
	base := []string{"PATH=/usr/bin:/bin", "HOME=/home/u", "SECRET=x"}
	dev := []string{"PATH=/nix/store/env/bin"}
	for _, tc := range []struct {
		name string
		env  proc.Env
		want string
	}{
		{"devShell", proc.Env{Dev: dev}, "/nix/store/env/bin:/usr/bin:/bin"},
		{"isolated", proc.Env{Dev: dev, Isolated: true}, "/nix/store/env/bin"},
		{"isolated, inheriting all", proc.Env{Dev: dev, Isolated: true, InheritAll: true}, "/nix/store/env/bin"},
		{"isolated, inheriting PATH", proc.Env{Dev: dev, Isolated: true, Inherit: []string{"PATH"}}, "/nix/store/env/bin"},
	} {
		env := proc.Environ(base, tc.env)
		var paths []string
		for _, kv := range env {
			if len(kv) > 5 && kv[:5] == "PATH=" {
				paths = append(paths, kv[5:])
			}
		}
		if got := proc.PathOf(env); got != tc.want {
			t.Errorf("%s: PATH %q, want %q", tc.name, got, tc.want)
		}
		if tc.env.Isolated && len(paths) != 1 {
			t.Errorf("%s: PATH entries %q, want the environment's alone", tc.name, paths)
		}
		if !slices.Contains(env, "HOME=/home/u") {
			t.Errorf("%s: HOME dropped: %q", tc.name, env)
		}
	}
}
