package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/wire"
)

// The STATE column shows the state the pool reports, with a countdown only
// while the backoff lasts, rounded up (never "backoff 0s"); the CWD column
// is the child's directory.
func TestPrintInstances(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		in   wire.Instance
		want string
	}{
		{"backoff under a second", wire.Instance{State: "backoff", BackoffUntil: now.Add(300 * time.Millisecond)}, " backoff 1s\n"},
		{"backoff 2.5s", wire.Instance{State: "backoff", BackoffUntil: now.Add(2500 * time.Millisecond)}, " backoff 3s\n"},
		{"backoff over", wire.Instance{State: "backoff", BackoffUntil: now.Add(-time.Second)}, " backoff\n"},
		{"ready after a backoff", wire.Instance{State: "ready", BackoffUntil: now.Add(-time.Second)}, " ready\n"},
		{"cwd", wire.Instance{State: "ready", Cwd: "/src/app/sub", CwdSource: "config"}, " /src/app/sub "},
		{"nix program with a rev", wire.Instance{State: "ready", Program: &wire.InstanceProgram{Spec: "nix:github:o/r#t", Rev: "abc", NarHash: "sha256-x", StorePath: "/nix/store/h-t"}},
			"x-1: program nix:github:o/r#t (rev abc, floating): /nix/store/h-t\n"},
		{"pinned nix program, no rev", wire.Instance{State: "ready", Program: &wire.InstanceProgram{Spec: "nix:path:/a?narHash=h#t", NarHash: "sha256-x", StorePath: "/nix/store/h-t", Pinned: true}},
			"x-1: program nix:path:/a?narHash=h#t (narHash sha256-x, pinned): /nix/store/h-t\n"},
		{"environment", wire.Instance{State: "ready", Program: &wire.InstanceProgram{Environment: "shell:/a/shell.nix", EnvironmentRev: "sha256:ff"}},
			"x-1: environment shell:/a/shell.nix (sha256:ff)\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			tt.in.ID, tt.in.Server, tt.in.Key = "x-1", "x", "global"
			printInstances(&cli{stdout: &out}, []wire.Instance{tt.in}, now)
			if !strings.Contains(out.String(), tt.want) || strings.Contains(out.String(), " 0s\n") {
				t.Errorf("got\n%s\nwant it to contain %q", out.String(), tt.want)
			}
		})
	}
}

func TestPrintDaemon(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	printDaemon(&cli{stdout: &out}, &wire.DaemonInfo{Pid: 7, Version: "v1", Socket: "/run/s", Config: "",
		Started: now.Add(-3 * time.Minute)}, now)
	if want := "daemon pid 7 v1, up 3m00s, socket /run/s, tcp off, config built-in demo server\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}
