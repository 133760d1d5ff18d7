package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const installNix = "apt-get install -y nix-bin"

// NixSetup is how a test runs real nix offline: single-user, no sandbox, no
// substituters, an empty flake registry, fast failure of downloads.
type NixSetup struct {
	Bin    string   // the absolute path of nix
	Config []string // NIX_CONFIG lines every nix process needs
	Env    []string // the process's environment, NIX_CONFIG dropped, XDG_CACHE_HOME in a temp dir
	System string   // the flake system of this machine, e.g. "x86_64-linux"
}

// CmdEnv is Env with Config as NIX_CONFIG: the environment of a nix process
// the test runs itself.
func (n NixSetup) CmdEnv() []string {
	return append(n.Env[:len(n.Env):len(n.Env)], "NIX_CONFIG="+strings.Join(n.Config, "\n"))
}

// Nix finds nix (skipping t, or failing it under MCPX_REQUIRE_DEPS=1, when
// it is absent) and returns the settings that make it work here: without
// them flakes are refused, a /bin/sh builder fails in the sandbox, every
// build retries the public cache, and an unreachable github: ref hangs.
// The store (/nix/store) is shared by every test; the fetcher cache is the
// test's own.
func Nix(t testing.TB) NixSetup {
	t.Helper()
	bin, err := exec.LookPath("nix")
	if err != nil {
		missing(t, "nix is not installed", installNix)
	}
	dir := t.TempDir()
	registry := filepath.Join(dir, "registry.json")
	if err := os.WriteFile(registry, []byte(`{"flakes":[],"version":2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NIX_CONFIG=") && !strings.HasPrefix(kv, "XDG_CACHE_HOME=") {
			env = append(env, kv)
		}
	}
	env = append(env, "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	return NixSetup{
		Bin: bin,
		Config: []string{
			"experimental-features = nix-command flakes",
			"sandbox = false",
			"substituters =",
			"build-users-group =",
			"flake-registry = " + registry,
			"download-attempts = 1",
			"connect-timeout = 5",
			"stalled-download-timeout = 10",
			"warn-dirty = false",
		},
		Env:    env,
		System: arch + "-" + runtime.GOOS,
	}
}
