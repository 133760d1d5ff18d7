package deploy_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"mcpx.dev/mcpx/deploy"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// userManager is a runtime directory in which a systemd user manager
// seems to run (its private socket's path exists).
func userManager(t *testing.T) string {
	t.Helper()
	run := t.TempDir()
	testenv.Mkdir(t, filepath.Join(run, "systemd"))
	testenv.WriteFile(t, filepath.Join(run, "systemd", "private"), "")
	return run
}

func found(string) (string, error) { return "/usr/bin/x", nil }

// recorder is a Manager.Run that records what it runs and fails the
// command named fail.
type recorder struct {
	ran  []string
	fail string
	out  map[string]string // a command's stdout
}

func (r *recorder) run(_ context.Context, argv []string, stdout, _ io.Writer) error {
	line := deploy.ShellJoin(argv)
	r.ran = append(r.ran, line)
	io.WriteString(stdout, r.out[line])
	if line == r.fail {
		return errors.New("exit status 1")
	}
	return nil
}

// TestManagerCommands: what each platform's manager runs after each
// action on the service definition.
func TestManagerCommands(t *testing.T) {
	linux := deploy.Manager{Platform: deploy.Linux, Path: "/h/.config/systemd/user/mcpx.service", UID: 501}
	darwin := deploy.Manager{Platform: deploy.Darwin, Path: "/h/Library/LaunchAgents/dev.mcpx.serve.plist", UID: 501}
	for _, tc := range []struct {
		m      deploy.Manager
		action deploy.Action
		want   []string
	}{
		{linux, deploy.Create, []string{"systemctl --user daemon-reload", "systemctl --user enable --now mcpx.service"}},
		{linux, deploy.Unchanged, []string{"systemctl --user daemon-reload", "systemctl --user enable --now mcpx.service"}},
		{linux, deploy.Update, []string{"systemctl --user daemon-reload", "systemctl --user enable mcpx.service", "systemctl --user restart mcpx.service"}},
		{linux, deploy.Remove, []string{"systemctl --user disable --now mcpx.service"}},
		{linux, deploy.Edited, nil},
		{darwin, deploy.Create, []string{"launchctl bootstrap gui/501 /h/Library/LaunchAgents/dev.mcpx.serve.plist"}},
		{darwin, deploy.Unchanged, nil},
		{darwin, deploy.Update, []string{"launchctl bootout gui/501/dev.mcpx.serve", "launchctl bootstrap gui/501 /h/Library/LaunchAgents/dev.mcpx.serve.plist"}},
		{darwin, deploy.Remove, []string{"launchctl bootout gui/501/dev.mcpx.serve"}},
	} {
		var got []string
		for _, c := range tc.m.Commands(tc.action) {
			got = append(got, deploy.ShellJoin(c))
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", tc.m.Platform, tc.action, diff)
		}
	}
	if got := linux.Reload(); len(got) != 1 || deploy.ShellJoin(got[0]) != "systemctl --user daemon-reload" {
		t.Errorf("linux Reload: %q", got)
	}
	if got := darwin.Reload(); got != nil {
		t.Errorf("darwin Reload: %q, want none", got)
	}
}

// TestManagerRunAll: commands run in order until one fails, the error
// naming it; dry, or with no manager to talk to, they are printed for the
// user instead, saying why.
func TestManagerRunAll(t *testing.T) {
	ctx := t.Context()
	rec := &recorder{fail: "systemctl --user enable --now mcpx.service"}
	m := deploy.Manager{Platform: deploy.Linux, Path: "/x", UID: 501, RuntimeDir: userManager(t), Run: rec.run, LookPath: found}
	cmds := append(m.Commands(deploy.Create), []string{"never", "run"})
	var out bytes.Buffer
	err := m.RunAll(ctx, cmds, false, &out, io.Discard)
	if err == nil || err.Error() != "systemctl --user enable --now mcpx.service: exit status 1" {
		t.Errorf("RunAll: %v, want the failed command named", err)
	}
	if want := []string{"systemctl --user daemon-reload", "systemctl --user enable --now mcpx.service"}; !cmp.Equal(rec.ran, want) {
		t.Errorf("ran %q, want %q and nothing after the failure", rec.ran, want)
	}
	if want := "running systemctl --user daemon-reload\nrunning systemctl --user enable --now mcpx.service\n"; out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}

	rec.ran = nil
	out.Reset()
	if err := m.RunAll(ctx, cmds[:1], true, &out, io.Discard); err != nil || rec.ran != nil || out.String() != "would run:\n  systemctl --user daemon-reload\n" {
		t.Errorf("dry: %v, ran %q, printed %q", err, rec.ran, out.String())
	}

	for _, tc := range []struct {
		m    deploy.Manager
		want string
	}{
		{deploy.Manager{Platform: deploy.Linux, LookPath: func(string) (string, error) { return "", errors.New("no") }}, "systemctl is not on PATH"},
		{deploy.Manager{Platform: deploy.Darwin, LookPath: func(string) (string, error) { return "", errors.New("no") }}, "launchctl is not on PATH"},
		{deploy.Manager{Platform: deploy.Linux, LookPath: found, RuntimeDir: "relative"}, "$XDG_RUNTIME_DIR is not set"},
		{deploy.Manager{Platform: deploy.Linux, LookPath: found, RuntimeDir: t.TempDir(), UID: 501}, "no systemd user manager runs for this user"},
	} {
		tc.m.Run = rec.run
		rec.ran = nil
		out.Reset()
		if err := tc.m.RunAll(ctx, [][]string{{"x", "a b"}}, false, &out, io.Discard); err != nil || rec.ran != nil ||
			!strings.HasPrefix(out.String(), "not run ("+tc.want) || !strings.HasSuffix(out.String(), "); run:\n  x 'a b'\n") {
			t.Errorf("%+v: %v, ran %q, printed %q; want it printed, saying %q", tc.m, err, rec.ran, out.String(), tc.want)
		}
	}
	if why := (deploy.Manager{Platform: deploy.Linux, LookPath: found, RuntimeDir: t.TempDir(), UID: 501}).Missing(); !strings.Contains(why, "loginctl enable-linger 501") {
		t.Errorf("no user manager: %q, want the loginctl fix", why)
	}
}

// TestManagerState: systemctl's own words for enabled and running (its
// non-zero exit is an answer), launchctl's loaded or not, unknown (and why)
// with no manager.
func TestManagerState(t *testing.T) {
	ctx := t.Context()
	rec := &recorder{fail: "systemctl --user is-active mcpx.service", out: map[string]string{
		"systemctl --user is-enabled mcpx.service": "enabled\n",
		"systemctl --user is-active mcpx.service":  "inactive\nmore\n",
	}}
	m := deploy.Manager{Platform: deploy.Linux, RuntimeDir: userManager(t), Run: rec.run, LookPath: found}
	if e, r := m.State(ctx); e != "enabled" || r != "inactive" {
		t.Errorf("linux: %q %q, want enabled inactive", e, r)
	}
	rec.out = nil
	if e, r := m.State(ctx); e != "unknown" || r != "unknown" {
		t.Errorf("linux, systemctl says nothing: %q %q", e, r)
	}
	d := deploy.Manager{Platform: deploy.Darwin, UID: 7, Run: rec.run, LookPath: found}
	if e, r := d.State(ctx); e != "loaded" || r != "see `launchctl print gui/7/dev.mcpx.serve`" {
		t.Errorf("darwin, loaded: %q %q", e, r)
	}
	rec.fail = "launchctl print gui/7/dev.mcpx.serve"
	if e, r := d.State(ctx); e != "not loaded" || r != "no" {
		t.Errorf("darwin, not loaded: %q %q", e, r)
	}
	none := deploy.Manager{Platform: deploy.Linux, LookPath: found}
	if e, r := none.State(ctx); e != "unknown ($XDG_RUNTIME_DIR is not set: no systemd user manager to talk to)" || r != "unknown" {
		t.Errorf("no manager: %q %q", e, r)
	}
	if got := m.Logs(deploy.Service{StateDir: "/s"}); got != "journalctl --user -u mcpx.service" {
		t.Errorf("linux logs: %q", got)
	}
	if got := d.Logs(deploy.Service{StateDir: "/s"}); got != "/s/service.log" {
		t.Errorf("darwin logs: %q", got)
	}
}

// TestManagerExec: with no Run, commands are real processes found on PATH
// (here a systemctl of the test's own that records its arguments: the
// machine has no user manager), their output passed through.
func TestManagerExec(t *testing.T) {
	bin := t.TempDir()
	log := filepath.Join(bin, "args")
	testenv.WriteFile(t, filepath.Join(bin, "systemctl"), "#!/bin/sh\necho \"$*\" >> "+log+"\necho ran \"$2\"\n[ \"$2\" != restart ]\n")
	if err := os.Chmod(filepath.Join(bin, "systemctl"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	m := deploy.Manager{Platform: deploy.Linux, RuntimeDir: userManager(t)}
	var out bytes.Buffer
	err := m.RunAll(t.Context(), m.Commands(deploy.Update), false, &out, io.Discard)
	if err == nil || !strings.HasPrefix(err.Error(), "systemctl --user restart mcpx.service: exit status 1") {
		t.Errorf("RunAll: %v, want the restart's failure", err)
	}
	b, _ := os.ReadFile(log)
	if want := "--user daemon-reload\n--user enable mcpx.service\n--user restart mcpx.service\n"; string(b) != want {
		t.Errorf("systemctl ran with %q, want %q", b, want)
	}
	if !strings.Contains(out.String(), "running systemctl --user enable mcpx.service\nran enable\n") {
		t.Errorf("the command's output did not pass through:\n%s", out.String())
	}
	if e, _ := m.State(t.Context()); e != "ran is-enabled" {
		t.Errorf("State: enabled %q, want systemctl's first line", e)
	}
}
