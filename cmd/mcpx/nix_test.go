package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

const nixDemoFlake = `{
  outputs = { self }: {
    packages.SYSTEM.demo = derivation {
      name = "mcp-demo-1.0"; system = "SYSTEM"; builder = "/bin/sh";
      script = builtins.readFile ./demo.sh;
      args = [ "-c" ''/bin/mkdir -p $out/bin && printf '%s\n' "$script" > $out/bin/demo && /bin/chmod +x $out/bin/demo'' ];
    } // { meta.mainProgram = "demo"; };
  };
}
`

// TestNixCommand: `mcpx nix ls` shows a nix: server's spec, lock and store
// path; after an edit of its flake `mcpx nix refresh` switches the next
// call to the new program; `mcpx nix gc` drops the entry of a server the
// config no longer has, with its GC root.
func TestNixCommand(t *testing.T) {
	nx := testenv.Nix(t)
	proctest.CheckNoLeaks(t)
	for _, kv := range nx.Env {
		if v, ok := strings.CutPrefix(kv, "XDG_CACHE_HOME="); ok {
			t.Setenv("XDG_CACHE_HOME", v) // the daemon's nix runs in this environment
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	writeFlake := func(dir, tag string) {
		testenv.WriteFiles(t, dir, map[string]string{
			"flake.nix": strings.ReplaceAll(nixDemoFlake, "SYSTEM", nx.System),
			"demo.sh":   "#!/bin/sh\nMCPX_NIX_WRAPPED=" + tag + " " + demo.EnvServer + "=1 exec " + strconv.Quote(self) + " \"$@\"\n",
		})
	}
	flake, oldFlake := t.TempDir(), t.TempDir()
	writeFlake(flake, "v1")
	writeFlake(oldFlake, "old")
	spec, oldSpec := "nix:path:"+flake+"#demo", "nix:path:"+oldFlake+"#demo"

	dir := t.TempDir()
	sock, state, cfgPath := filepath.Join(dir, "mcpx.sock"), filepath.Join(dir, "state"), filepath.Join(dir, "config.json")
	writeCfg := func(servers map[string]string) {
		ss := map[string]any{}
		for name, cmd := range servers {
			ss[name] = map[string]any{"command": cmd, "scope": "global", "env": map[string]string{proctest.MarkerEnv: proctest.Marker(t)}}
		}
		doc, _ := json.Marshal(map[string]any{"servers": ss, "nix": map[string]any{"binary": nx.Bin, "config": nx.Config}})
		if err := os.WriteFile(cfgPath, doc, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeCfg(map[string]string{"demo": spec, "old": oldSpec})
	ctx, stopDaemon := context.WithCancel(t.Context())
	defer stopDaemon()
	var logs testenv.SyncBuffer
	served := make(chan int, 1)
	go func() {
		served <- run(ctx, []string{"serve", "--config", cfgPath, "--socket", sock, "--state-dir", state, "--listen", "off"},
			strings.NewReader(""), &testenv.SyncBuffer{}, &logs)
	}()
	// The socket file exists a moment before it accepts: wait for a dial.
	testenv.WaitFor(t, "the socket", func() bool {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	mcpx := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run(t.Context(), append(args, "--broker", sock), strings.NewReader(""), &out, &errOut); code != exitOK {
			t.Fatalf("mcpx %s: exit %d: %s\nlog:\n%s", strings.Join(args, " "), code, errOut.String(), logs.String())
		}
		return out.String()
	}
	wrapped := func(server string) string {
		return strings.TrimSpace(mcpx("call", server+".env", `{"name":"MCPX_NIX_WRAPPED"}`))
	}
	if got := wrapped("demo"); got != "v1" {
		t.Fatalf("demo: MCPX_NIX_WRAPPED = %q, want v1", got)
	}
	if got := wrapped("old"); got != "old" {
		t.Fatalf("old: MCPX_NIX_WRAPPED = %q", got)
	}

	// A server whose spec fails shows nix's message in `mcpx tools` (whose
	// other servers still list their tools) and as its instance's last
	// error in `mcpx status`, which shows demo's spec, lock and store path.
	broken := strings.TrimSuffix(spec, "#demo") + "#nope"
	writeCfg(map[string]string{"demo": spec, "old": oldSpec, "broken": broken})
	mcpx("reload")
	var toolsOut, toolsErr bytes.Buffer
	code := run(t.Context(), []string{"tools", "--broker", sock}, strings.NewReader(""), &toolsOut, &toolsErr)
	if code == exitOK || !strings.Contains(toolsErr.String(), "broken") || !strings.Contains(toolsErr.String(), "does not provide attribute") ||
		!strings.Contains(toolsOut.String(), "demo") || !strings.Contains(toolsOut.String(), "echo") {
		t.Errorf("mcpx tools with a broken nix: server: exit %d\nstdout:\n%s\nstderr:\n%s", code, toolsOut.String(), toolsErr.String())
	}
	st := mcpx("status")
	t.Logf("mcpx status:\n%s", st)
	for _, want := range []string{": program " + spec + " (narHash sha256-", "floating): /nix/store/", "last error:", broken, "does not provide attribute"} {
		if !strings.Contains(st, want) {
			t.Errorf("mcpx status lacks %q:\n%s", want, st)
		}
	}
	writeCfg(map[string]string{"demo": spec, "old": oldSpec})
	mcpx("reload")

	ls := mcpx("nix", "ls")
	t.Logf("mcpx nix ls:\n%s", ls)
	for _, want := range []string{"SERVER", "PINNED", "STORE PATH", "demo", spec, oldSpec, "/nix/store/", "sha256-"} {
		if !strings.Contains(ls, want) {
			t.Errorf("mcpx nix ls lacks %q:\n%s", want, ls)
		}
	}

	writeFlake(flake, "v2")
	ref := mcpx("nix", "refresh", "demo")
	t.Logf("mcpx nix refresh demo:\n%s", ref)
	if !strings.Contains(ref, "replacing the instances of demo") {
		t.Errorf("mcpx nix refresh demo printed:\n%s", ref)
	}
	if got := wrapped("demo"); got != "v2" {
		t.Errorf("after the refresh MCPX_NIX_WRAPPED = %q, want v2", got)
	}

	writeCfg(map[string]string{"demo": spec})
	mcpx("reload")
	if ls := mcpx("nix", "ls"); !strings.Contains(ls, "unreferenced") || !strings.Contains(ls, oldSpec) {
		t.Errorf("after dropping server old, mcpx nix ls:\n%s", ls)
	}
	gc := mcpx("nix", "gc")
	t.Logf("mcpx nix gc:\n%s", gc)
	if !strings.Contains(gc, "dropped 1 cache entries") || !strings.Contains(gc, oldSpec) {
		t.Errorf("mcpx nix gc printed:\n%s", gc)
	}
	roots, err := os.ReadDir(filepath.Join(state, "nix", "roots"))
	if err != nil || len(roots) != 1 {
		t.Errorf("GC roots after gc: %v %v, want demo's alone", roots, err)
	}
	if ls := mcpx("nix", "ls"); strings.Contains(ls, oldSpec) {
		t.Errorf("after gc, mcpx nix ls still shows %s:\n%s", oldSpec, ls)
	}
	stopDaemon()
	if code := <-served; code != exitOK {
		t.Errorf("serve exited %d:\n%s", code, logs.String())
	}
}

// TestPrintNixList: `mcpx nix ls` shows servers with a nix environment in
// a table of their own (the lock or the shell.nix's hash, how many
// variables, when captured, or not yet), and unreferenced environments
// with the unreferenced programs.
func TestPrintNixList(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.Local)
	doc := &wire.NixList{
		Servers: []wire.NixServer{
			{Server: "both", Spec: "nix:github:o/r#tool", Program: &wire.NixProgram{Rev: "0123456789abcdef0123", StorePath: "/nix/store/abc-tool"},
				Environment: "flake:github:o/r", Env: &wire.NixEnvironment{Environment: "flake:github:o/r", Rev: "fedcba9876543210fedc", Variables: 41, CapturedAt: at}},
			{Server: "shell", Environment: "shell:/src/shell.nix", Env: &wire.NixEnvironment{Environment: "shell:/src/shell.nix", FileHash: "99aa88bb77cc66dd55ee", Variables: 7, CapturedAt: at}},
			{Server: "pending", Environment: "flake:path:/src/dev"},
		},
		UnreferencedEnvironments: []wire.NixEnvironment{{Environment: "flake:path:/old", NarHash: "sha256-old", Variables: 3}},
	}
	var out bytes.Buffer
	printNixList(&cli{stdout: &out}, doc)
	got := out.String()
	t.Logf("mcpx nix ls:\n%s", got)
	lines := strings.Split(got, "\n")
	find := func(prefix string) string {
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		return ""
	}
	if l := find("both  "); !strings.Contains(l, "nix:github:o/r#tool") || !strings.Contains(l, "0123456789ab") || strings.Count(got, "both") != 2 {
		t.Errorf("both: want a program row and an environment row:\n%s", got)
	}
	if l := find("shell "); !strings.Contains(l, "sha256:99aa88bb77cc") || !strings.Contains(l, " 7 ") || !strings.Contains(l, "2026-11-30 12:00:00") {
		t.Errorf("shell's row %q", l)
	}
	if l := find("pending "); !strings.Contains(l, "(not captured yet)") {
		t.Errorf("pending's row %q", l)
	}
	if !strings.Contains(got, "ENVIRONMENT") || !strings.Contains(got, "unreferenced") || !strings.Contains(got, "flake:path:/old  sha256-old  (environment, 3 variables)") {
		t.Errorf("the listing lacks the environment table or the unreferenced environment:\n%s", got)
	}
}
