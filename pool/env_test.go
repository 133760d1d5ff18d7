package pool_test

import (
	"context"
	"os"
	"path/filepath"
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

// TestExecutionEnvironment: the variables Options.Resolve returns for a
// server's Environment sit between the host's (filtered) and the server's
// own env; their PATH goes before the host's, and a command with no slash
// is found there; status shows what Resolve said of the program.
func TestExecutionEnvironment(t *testing.T) {
	bin := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(bin, "mcpx-devtool")); err != nil {
		t.Fatal(err)
	}
	s := demoServer(t, "dev", "OVERRIDDEN=server")
	s.Command, s.Environment = "mcpx-devtool", "flake:path:/src#dev"
	var envs []string
	resolve := func(_ context.Context, command, environment, _ string) (pool.Program, error) {
		envs = append(envs, environment)
		return pool.Program{Path: command, Env: []string{"DEV_VAR=dev", "PATH=" + bin, "OVERRIDDEN=dev", "GITHUB_TOKEN=from-shell"},
			Environment: environment, EnvRev: "sha256-abc"}, nil
	}
	p := newPool(t, pool.Options{Env: []string{"PATH=/bin:/usr/bin", "GITHUB_TOKEN=ghp_x", "HOME=/home/d"}, Resolve: resolve}, s)
	tg := pool.Target{Server: "dev", Key: "global"}
	for name, want := range map[string]string{
		"DEV_VAR":      "dev",
		"PATH":         bin + ":/bin:/usr/bin",
		"OVERRIDDEN":   "server",
		"GITHUB_TOKEN": "from-shell", // the shell's own, not the daemon's
		"HOME":         "/home/d",
	} {
		if got := mustCall(t, p, tg, "env", map[string]string{"name": name}); got != want {
			t.Errorf("$%s = %q, want %q", name, got, want)
		}
	}
	in := p.Instances()
	if len(in) != 1 || in[0].Program == nil || in[0].Program.Environment != "flake:path:/src#dev" || in[0].Program.EnvRev != "sha256-abc" {
		t.Errorf("status %+v: want the environment Resolve described", in)
	}
	if len(envs) != 1 || envs[0] != s.Environment {
		t.Errorf("Resolve saw environments %q, want the server's once", envs)
	}
}
