package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/pool/proc/sandbox"
	"mcpx.dev/mcpx/wire"
)

// confinedDaemon starts `mcpx serve` with one server, "jail", the demo
// server with its probing tools, confined by its config ("sandbox":
// true), its children surviving a killed daemon; it returns the daemon
// and a file the child must not read.
func confinedDaemon(t *testing.T) (*upgradeDaemon, string) {
	t.Helper()
	mcpx, dir, marker := processTest(t)
	probe := sandbox.Policy{Mode: sandbox.Enforce, Limits: sandbox.Limits{Memory: 1 << 30, Processes: 64, OpenFiles: 64}}
	if _, err := sandbox.Plan(&probe, sandbox.Probe()); err != nil {
		if os.Getenv(testenv.RequireDepsEnv) == "1" {
			t.Fatalf("this kernel cannot confine a child: %v", err)
		}
		t.Skipf("this kernel cannot confine a child: %v", err)
	}
	secret := filepath.Join(dir, "secret.txt")
	if err := os.WriteFile(secret, []byte("the owner's"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"pool": map[string]any{"survive": true}, "servers": map[string]any{
		"jail": map[string]any{"command": mcpx, "args": []string{"demo-server", "--failure-flags"}, "scope": "global", "sandbox": true,
			"env": map[string]string{proctest.MarkerEnv: proctest.Marker(t), demo.EnvProbe: "1"}},
	}})
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), marker, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_STATE_HOME="+filepath.Join(dir, "xstate"))
	return startUpgradeDaemon(t, mcpx, dir, cfgPath, env), secret
}

// jailed checks the daemon's one instance: confined by the policy
// fingerprint, pid (if not 0), and the kernel's refusal of secret; it
// returns the instance.
func jailed(t *testing.T, d *upgradeDaemon, secret, fingerprint string, pid int) wire.Instance {
	t.Helper()
	if _, err := callText(t.Context(), d.bc, client.Caller{}, "jail", "read", `{"path": "`+secret+`"}`); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("the confined child reading %s: %v, want the kernel's permission denied", secret, err)
	}
	in, ok := d.instances()["jail-1"]
	switch {
	case !ok || in.Sandbox == nil:
		t.Fatalf("instance %+v, want jail-1 confined\n%s", in, d.logs.String())
	case fingerprint != "" && in.Sandbox.Fingerprint != fingerprint:
		t.Errorf("the policy's fingerprint is %s, want %s", in.Sandbox.Fingerprint, fingerprint)
	case pid != 0 && in.Pid != pid:
		t.Errorf("pid %d, want %d: the child was not kept", in.Pid, pid)
	}
	if f := enforced(in.Sandbox.Enforcement, "filesystem"); !f {
		t.Errorf("the filesystem is not enforced: %+v", in.Sandbox.Enforcement)
	}
	return in
}

func enforced(fs []wire.SandboxFeature, name string) bool {
	for _, f := range fs {
		if f.Name == name {
			return f.Enforced
		}
	}
	return false
}

// TestSandboxProcess: a real `mcpx serve` confines the server that says
// so: `mcpx sandbox show` says with what, `mcpx status` marks it, and its
// child stays confined — the same pid, the same policy — across `mcpx
// daemon upgrade` and across a SIGKILL of the daemon (pool.survive).
func TestSandboxProcess(t *testing.T) {
	t.Parallel() // a process test (plain_test.go)
	d, secret := confinedDaemon(t)
	in := jailed(t, d, secret, "", 0)

	out, err := d.cli("sandbox", "show", "jail", "--json", "--broker", d.sock)
	var show wire.Sandbox
	if err != nil || json.Unmarshal([]byte(out), &show) != nil {
		t.Fatalf("sandbox show: %v: %s", err, out)
	}
	if !show.Confined || show.Fingerprint != in.Sandbox.Fingerprint || show.Why != "config" || show.Network != "none" || show.Refused != "" {
		t.Errorf("sandbox show %+v, want the running instance's policy %s", show, in.Sandbox.Fingerprint)
	}
	for _, name := range []string{"HOME", "TMPDIR", "PATH"} {
		if !strings.Contains(strings.Join(show.Env, " "), name) {
			t.Errorf("sandbox show's environment %v lacks %s", show.Env, name)
		}
	}
	if out, err := d.cli("sandbox", "show", "jail", "--broker", d.sock); err != nil || !strings.Contains(out, "sandbox:  confined (the server's config)") || !strings.Contains(out, "filesystem: enforced by Landlock") {
		t.Errorf("sandbox show: %v:\n%s", err, out)
	}
	if out, err := d.cli("status", "--broker", d.sock); err != nil || !strings.Contains(out, "(confined)") || !strings.Contains(out, "jail-1: confined (the server's config)") {
		t.Errorf("status does not mark the confined instance: %v:\n%s", err, out)
	}

	if out, err := d.cli("daemon", "upgrade", "--broker", d.sock); err != nil || !strings.Contains(out, "generation 2") {
		t.Fatalf("daemon upgrade: %v: %s\n%s", err, out, d.logs.String())
	}
	jailed(t, d, secret, in.Sandbox.Fingerprint, in.Pid)

	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d.cmd.Wait() //nolint:errcheck // killed
	if !running(in.Pid) {
		t.Fatalf("the confined child %d died with its daemon", in.Pid)
	}
	next := startUpgradeDaemon(t, d.mcpx, filepath.Dir(d.sock), filepath.Join(filepath.Dir(d.sock), "config.json"), d.env)
	jailed(t, next, secret, in.Sandbox.Fingerprint, in.Pid)
	if out, err := next.cli("daemon", "stop", "--broker", next.sock); err != nil {
		t.Errorf("daemon stop: %v: %s", err, out)
	}
	next.waitExit()
	testenv.WaitFor(t, "the confined child stopped with the daemon", func() bool { return !running(in.Pid) })
}
