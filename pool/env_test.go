package pool_test

import (
	"testing"

	"mcpx.dev/mcpx/pool"
)

// TestChildGetsACleanEnvironment: a child sees the allowlist and its
// server's env, never the daemon's other variables (its secrets); a
// server opts in to more by name, or to everything.
func TestChildGetsACleanEnvironment(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "daemon-secret")
	t.Setenv("MCPX_TOKEN", "daemon-token")
	t.Setenv("SSH_AUTH_SOCK", "/tmp/agent.sock")
	t.Setenv("LC_TIME", "C.UTF-8")
	t.Setenv("HOME", "/home/daemon")
	clean := demoServer(t, "clean", "FROM_CONFIG=yes")
	named := demoServer(t, "named")
	named.InheritEnv = []string{"SSH_AUTH_SOCK"}
	all := demoServer(t, "all")
	all.InheritAllEnv = true
	p := newPool(t, pool.Options{}, clean, named, all)

	tests := []struct {
		server, name, want string
	}{
		{"clean", "AWS_SECRET_ACCESS_KEY", ""},
		{"clean", "MCPX_TOKEN", ""},
		{"clean", "SSH_AUTH_SOCK", ""},
		{"clean", "HOME", "/home/daemon"},
		{"clean", "LC_TIME", "C.UTF-8"},
		{"clean", "FROM_CONFIG", "yes"},
		{"named", "SSH_AUTH_SOCK", "/tmp/agent.sock"},
		{"named", "AWS_SECRET_ACCESS_KEY", ""},
		{"all", "AWS_SECRET_ACCESS_KEY", "daemon-secret"},
		{"all", "MCPX_TOKEN", "daemon-token"},
	}
	for _, tt := range tests {
		tg := pool.Target{Server: tt.server, Key: "global"}
		if got := mustCall(t, p, tg, "env", map[string]string{"name": tt.name}); got != tt.want {
			t.Errorf("server %s: $%s = %q, want %q", tt.server, tt.name, got, tt.want)
		}
	}
}

// TestOptionsEnvIsFilteredToo: Options.Env replaces the daemon's
// environment as the source, and is filtered the same way.
func TestOptionsEnvIsFilteredToo(t *testing.T) {
	p := newPool(t, pool.Options{Env: []string{"PATH=/bin", "GITHUB_TOKEN=ghp_x"}}, demoServer(t, "demo"))
	tg := pool.Target{Server: "demo", Key: "global"}
	if got := mustCall(t, p, tg, "env", map[string]string{"name": "GITHUB_TOKEN"}); got != "" {
		t.Errorf("$GITHUB_TOKEN = %q, want it withheld", got)
	}
	if got := mustCall(t, p, tg, "env", map[string]string{"name": "PATH"}); got != "/bin" {
		t.Errorf("$PATH = %q, want /bin", got)
	}
}
