package pool

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSpawnCwd(t *testing.T) {
	tests := []struct {
		name            string
		configCwd, root string
		want            string
		src             CwdSource
	}{
		{"config wins over scope root", "/etc/x", "/src/app", "/etc/x", CwdConfig},
		{"scope root", "", "/src/app", "/src/app", CwdScope},
		{"degraded cwd root is still a root", "", "/tmp/notrepo", "/tmp/notrepo", CwdScope},
		{"global sends nothing", "", "", "", CwdDaemon},
		{"config cwd with no root", "/opt/tool", "", "/opt/tool", CwdConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, src := SpawnCwd(tt.configCwd, tt.root)
			if got != tt.want || src != tt.src {
				t.Errorf("SpawnCwd(%q, %q) = %q, %s; want %q, %s", tt.configCwd, tt.root, got, src, tt.want, tt.src)
			}
		})
	}
}

func TestResolveSpawn(t *testing.T) {
	def := &Server{
		Name:    "fs",
		Command: "/bin/tool",
		Args:    []string{"--root", "${mcpx.root}", "${HOME}", "${mcpx.cwd}/x"},
		Env:     map[string]string{"WS": "${mcpx.root}", "PLAIN": "v"},
		Cwd:     "${mcpx.root}/sub",
	}
	sp, err := resolveSpawn(def, vars{root: "/src/app", cwd: "/src/app/pkg"})
	if err != nil {
		t.Fatal(err)
	}
	want := spawnSpec{
		command:   "/bin/tool",
		args:      []string{"--root", "/src/app", "${HOME}", "/src/app/pkg/x"},
		env:       []string{"PLAIN=v", "WS=/src/app"},
		cwd:       "/src/app/sub",
		cwdSource: CwdConfig,
	}
	if diff := cmp.Diff(want, sp, cmp.AllowUnexported(spawnSpec{})); diff != "" {
		t.Errorf("resolveSpawn mismatch (-want +got):\n%s", diff)
	}
	// The stored definition keeps its placeholders.
	if def.Args[1] != "${mcpx.root}" || def.Cwd != "${mcpx.root}/sub" {
		t.Errorf("definition was modified: %+v", def)
	}
}

func TestResolveSpawnErrors(t *testing.T) {
	tests := []struct {
		name  string
		def   Server
		v     vars
		wants []string
	}{
		{"empty root in args", Server{Name: "fs", Command: "x", Args: []string{"${mcpx.root}"}}, vars{}, []string{`"fs"`, "args[0]", "${mcpx.root} is empty"}},
		{"empty root in env", Server{Name: "fs", Command: "x", Env: map[string]string{"R": "${mcpx.root}"}}, vars{}, []string{`"fs"`, "env.R"}},
		{"empty cwd placeholder", Server{Name: "g", Command: "x", Cwd: "${mcpx.cwd}"}, vars{root: "/r"}, []string{`"g"`, "cwd", "${mcpx.cwd} is empty"}},
		{"unknown placeholder", Server{Name: "u", Command: "${mcpx.rot}"}, vars{root: "/r"}, []string{`"u"`, "command", "unknown placeholder"}},
		{"malformed", Server{Name: "m", Command: "x", Args: []string{"a", "${mcpx.root"}}, vars{root: "/r"}, []string{`"m"`, "args[1]", "malformed"}},
		{"relative cwd", Server{Name: "r", Command: "x", Cwd: "rel/dir"}, vars{root: "/r"}, []string{`"r"`, "cwd", "not absolute"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := resolveSpawn(&tt.def, tt.v)
			if err == nil {
				t.Fatal("resolveSpawn succeeded; want an error")
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestRootlessSpawnNeverUsesDaemonCwdForPlaceholders(t *testing.T) {
	def := &Server{Name: "s", Command: "x", Cwd: "${mcpx.root}"}
	if _, err := resolveSpawn(def, vars{}); err == nil {
		t.Fatal("an empty ${mcpx.root} in cwd must fail the spawn, not fall back to the daemon's cwd")
	}
}

func TestSafeKey(t *testing.T) {
	keys := []string{"global", "session:a", "session:a/", "worktree:/src/app", "worktree:/src/app ", "..", "", "pid:1234",
		"lease:" + strings.Repeat("x", 300), "lease:" + strings.Repeat("x", 301), "cwd:/home/é/a b"}
	seen := map[string]string{}
	for _, k := range keys {
		s := SafeKey(k)
		if len(s) > 48+1+12 || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "-") {
			t.Errorf("SafeKey(%q) = %q: too long, or starts with . or -", k, s)
		}
		for _, c := range s {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
				t.Errorf("SafeKey(%q) = %q holds %q", k, s, c)
			}
		}
		if prev, ok := seen[s]; ok {
			t.Errorf("SafeKey(%q) = SafeKey(%q) = %q", k, prev, s)
		}
		seen[s] = k
	}
	if got := SafeKey("worktree:/src/app"); !strings.HasPrefix(got, "worktree-src-app-") {
		t.Errorf("SafeKey(worktree:/src/app) = %q, want the readable slug first", got)
	}
}
