package deploy_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"mcpx.dev/mcpx/deploy"
)

// TestServiceFlows: `mcpx service`'s install, status and uninstall over a
// Linux manager (the recorder: this machine has no user manager). Install
// writes the unit and starts it, again leaves it and enables it again; a
// unit the user edited is neither installed over nor removed, nothing
// run; uninstall stops it, removes it and reloads the manager; a failed
// command stops a flow, named; a failed reload comes after the unit is
// gone.
func TestServiceFlows(t *testing.T) {
	ctx := t.Context()
	home, state := t.TempDir(), t.TempDir()
	path := deploy.ServiceFile(deploy.Linux, home, "")
	rec := &recorder{out: map[string]string{"systemctl --user is-enabled mcpx.service": "enabled\n", "systemctl --user is-active mcpx.service": "active\n"}}
	m := deploy.Manager{Platform: deploy.Linux, Path: path, UID: 501, RuntimeDir: userManager(t), Run: rec.run, LookPath: found}
	s := deploy.Service{Binary: "/opt/mcpx/bin/mcpx", StateDir: state}
	var out bytes.Buffer
	// step checks what a flow printed (each line a prefix of the wanted
	// one's, in order) and ran, and forgets both.
	step := func(name string, wantOut []string, wantRan ...string) {
		t.Helper()
		got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if len(got) != len(wantOut) {
			t.Errorf("%s printed %d lines, want %d:\n%s", name, len(got), len(wantOut), out.String())
		} else {
			for i := range got {
				if !strings.HasPrefix(got[i], wantOut[i]) {
					t.Errorf("%s printed line %d %q, want it to start %q", name, i+1, got[i], wantOut[i])
				}
			}
		}
		if diff := cmp.Diff(wantRan, rec.ran); diff != "" {
			t.Errorf("%s ran (-want +got):\n%s", name, diff)
		}
		out.Reset()
		rec.ran = nil
	}
	exists := func() bool { _, err := os.Stat(path); return err == nil }
	start := []string{"systemctl --user daemon-reload", "systemctl --user enable --now mcpx.service"}
	status := func(want string) {
		t.Helper()
		st, err := m.Status(ctx, s)
		if want := (deploy.ServiceStatus{File: path, FileState: want, Enabled: "enabled", Running: "active", Logs: "journalctl --user -u mcpx.service"}); err != nil || st != want {
			t.Errorf("status: %+v, %v; want %+v", st, err, want)
		}
		rec.ran = nil
	}

	if err := m.InstallService(ctx, s, true, &out, io.Discard); err != nil || exists() {
		t.Fatalf("dry install: %v, the unit written: %v", err, exists())
	}
	unitLines := strings.Count(strings.SplitN(out.String(), "would run:", 2)[0], "\n") - 1
	want := append([]string{"would create " + path + ":", "    # mcpx: the MCP broker"}, make([]string, unitLines-1)...)
	step("dry install", append(want, "would run:", "  systemctl --user daemon-reload", "  systemctl --user enable --now mcpx.service"))
	status("not installed")

	if err := m.InstallService(ctx, s, false, &out, io.Discard); err != nil || !exists() {
		t.Fatalf("install: %v, the unit written: %v", err, exists())
	}
	step("install", []string{"create " + path, "running systemctl --user daemon-reload", "running systemctl --user enable --now mcpx.service", "logs: journalctl --user -u mcpx.service"}, start...)
	if err := m.InstallService(ctx, s, false, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	step("install again", []string{"unchanged " + path, "running", "running", "logs: "}, start...)
	status("installed")

	unit, _ := os.ReadFile(path)
	if err := os.WriteFile(path, bytes.Replace(unit, []byte("RestartSec=2s"), []byte("RestartSec=30s"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	var edited *deploy.EditedError
	err := m.InstallService(ctx, s, false, &out, io.Discard)
	if !errors.As(err, &edited) || edited.Uninstall || !strings.Contains(edited.Diff, "+ RestartSec=30s") || !strings.Contains(err.Error(), path+" was edited since mcpx wrote it") {
		t.Errorf("install over an edited unit: %v, want an EditedError with the difference", err)
	}
	step("install over an edited unit", []string{""})
	status("installed, edited by you (or not written by mcpx)")
	removed, err := m.UninstallService(ctx, s, false, &out, io.Discard)
	if !errors.As(err, &edited) || !edited.Uninstall || removed || !exists() {
		t.Errorf("uninstall of an edited unit: %v, removed %v, still there %v; want an EditedError and the unit left", err, removed, exists())
	}
	step("uninstall of an edited unit", []string{""})

	if err := os.WriteFile(path, unit, 0o644); err != nil {
		t.Fatal(err)
	}
	if removed, err := m.UninstallService(ctx, s, true, &out, io.Discard); err != nil || removed || !exists() {
		t.Errorf("dry uninstall: %v, removed %v, still there %v", err, removed, exists())
	}
	step("dry uninstall", []string{"would run:", "  systemctl --user disable --now mcpx.service", "would remove " + path})
	rec.fail = "systemctl --user daemon-reload"
	removed, err = m.UninstallService(ctx, s, false, &out, io.Discard)
	var failed *deploy.CommandError
	if !removed || exists() || !errors.As(err, &failed) || err.Error() != "systemctl --user daemon-reload: exit status 1" {
		t.Errorf("uninstall, the reload failing: %v, removed %v, still there %v; want it removed and the reload's error", err, removed, exists())
	}
	step("uninstall", []string{"running systemctl --user disable --now mcpx.service", "removed " + path, "running systemctl --user daemon-reload"},
		"systemctl --user disable --now mcpx.service", "systemctl --user daemon-reload")
	if removed, err := m.UninstallService(ctx, s, false, &out, io.Discard); err != nil || removed {
		t.Errorf("uninstall with none installed: %v, removed %v", err, removed)
	}
	step("uninstall with none installed", []string{"no service installed at " + path})

	rec.fail = "systemctl --user enable --now mcpx.service"
	if err := m.InstallService(ctx, s, false, &out, io.Discard); !errors.As(err, &failed) || err.Error() != rec.fail+": exit status 1" {
		t.Errorf("install, the start failing: %v, want the command named", err)
	}
	step("install, the start failing", []string{"create " + path, "running", "running"}, start...)
}
