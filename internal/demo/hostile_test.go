package demo_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/demo"
)

// TestHostileTools: unconfined, each hostile tool reaches what it was
// pointed at (the sandbox's tests see the same calls refused), and each
// answers a failure as the system's error.
func TestHostileTools(t *testing.T) {
	cs, _ := startChild(t, nil, demo.EnvProbe+"=1")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o600)
	if got := callText(t, cs, "list", map[string]any{"path": dir}); got != "a.txt" {
		t.Errorf("list = %q", got)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("banner"))
			c.Close()
		}
	}()
	if got := callText(t, cs, "connect", map[string]any{"addr": ln.Addr().String()}); got != "connected\nbanner" {
		t.Errorf("connect = %q", got)
	}
	if got := callText(t, cs, "spawn", map[string]any{"count": 3}); got != "started 3" {
		t.Errorf("spawn = %q", got)
	}
	if got := callText(t, cs, "alloc", map[string]any{"mib": 8}); got != "allocated 8 MiB" {
		t.Errorf("alloc = %q", got)
	}
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleep.Process.Kill(); sleep.Wait() }()
	if got := callText(t, cs, "signal", map[string]any{"pid": sleep.Process.Pid, "signal": 0}); got != "ok" {
		t.Errorf("signal = %q", got)
	}
	if got := callText(t, cs, "ptrace", map[string]any{"pid": sleep.Process.Pid}); got != "attached" {
		t.Errorf("ptrace = %q", got)
	}
	for tool, args := range map[string]map[string]any{
		"list":    {"path": filepath.Join(dir, "none")},
		"connect": {"addr": "127.0.0.1:1"},
		"signal":  {"pid": 1 << 22, "signal": 0},
		"ptrace":  {"pid": 1 << 22},
	} {
		res := call(t, cs, tool, args)
		if got := textOf(t, res); !res.IsError || !strings.Contains(got, "no such") && !strings.Contains(got, "refused") {
			t.Errorf("%s of nothing = %q (isError %v), want the system's error", tool, got, res.IsError)
		}
	}
}
