package deploy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Manager drives the service manager of one platform for the service
// definition at Path: `systemctl --user` on Linux, launchctl in the user's
// GUI domain on macOS.
//
//	m := deploy.Manager{Platform: deploy.Linux, Path: deploy.ServiceFile(deploy.Linux, home, ""), UID: os.Getuid(), RuntimeDir: os.Getenv("XDG_RUNTIME_DIR")}
//	err := m.RunAll(ctx, m.Commands(deploy.Create), false, os.Stdout, os.Stderr)
type Manager struct {
	Platform Platform
	// Path is the service definition (ServiceFile).
	Path string
	// UID is the user's: launchctl's domain is gui/<uid>.
	UID int
	// RuntimeDir is $XDG_RUNTIME_DIR, where a systemd user manager listens
	// ("" = unset: there is none to talk to).
	RuntimeDir string
	// Run runs argv to its end with its output to stdout and stderr; nil
	// = os/exec. Tests replace it: they have no service manager.
	Run func(ctx context.Context, argv []string, stdout, stderr io.Writer) error
	// LookPath finds systemctl or launchctl; nil = exec.LookPath.
	LookPath func(file string) (string, error)
}

func (m Manager) run(ctx context.Context, argv []string, stdout, stderr io.Writer) error {
	if m.Run != nil {
		return m.Run(ctx, argv, stdout, stderr)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd.Run()
}

// Target is the launchd service target of the agent: gui/<uid>/<Label>.
func (m Manager) Target() string {
	return "gui/" + strconv.Itoa(m.UID) + "/" + Label
}

// Commands returns what to run after action on the service definition:
// load and start it (Create; on Linux Unchanged too, which enables it
// again), reload and restart it (Update), stop and unload it (Remove).
func (m Manager) Commands(action Action) [][]string {
	if m.Platform == Darwin {
		domain := "gui/" + strconv.Itoa(m.UID)
		switch action {
		case Create:
			return [][]string{{"launchctl", "bootstrap", domain, m.Path}}
		case Update:
			return [][]string{{"launchctl", "bootout", m.Target()}, {"launchctl", "bootstrap", domain, m.Path}}
		case Remove:
			return [][]string{{"launchctl", "bootout", m.Target()}}
		}
		return nil
	}
	switch action {
	case Create, Unchanged:
		return [][]string{{"systemctl", "--user", "daemon-reload"}, {"systemctl", "--user", "enable", "--now", UnitName}}
	case Update:
		return [][]string{{"systemctl", "--user", "daemon-reload"}, {"systemctl", "--user", "enable", UnitName}, {"systemctl", "--user", "restart", UnitName}}
	case Remove:
		return [][]string{{"systemctl", "--user", "disable", "--now", UnitName}}
	}
	return nil
}

// Reload is what a Linux user manager runs after the unit file is gone;
// nil on macOS.
func (m Manager) Reload() [][]string {
	if m.Platform == Linux {
		return [][]string{{"systemctl", "--user", "daemon-reload"}}
	}
	return nil
}

// Missing says why the service manager cannot be driven here ("" = it
// can): no systemctl or launchctl, or (Linux) no user manager to talk to.
func (m Manager) Missing() string {
	tool := "systemctl"
	if m.Platform == Darwin {
		tool = "launchctl"
	}
	lookPath := m.LookPath
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	if _, err := lookPath(tool); err != nil {
		return tool + " is not on PATH"
	}
	if m.Platform == Linux {
		if !filepath.IsAbs(m.RuntimeDir) {
			return "$XDG_RUNTIME_DIR is not set: no systemd user manager to talk to"
		}
		private := filepath.Join(m.RuntimeDir, "systemd", "private")
		if _, err := os.Stat(private); err != nil {
			return "no systemd user manager runs for this user (" + private + " is missing; `loginctl enable-linger " + strconv.Itoa(m.UID) + "` keeps one running)"
		}
	}
	return ""
}

// RunAll runs cmds one after the other, saying so on stdout, their output
// to stdout and stderr, until one fails; dry, or when the manager is
// Missing, it prints them for the user to run instead. The error is a
// *CommandError naming the command that failed.
func (m Manager) RunAll(ctx context.Context, cmds [][]string, dry bool, stdout, stderr io.Writer) error {
	if len(cmds) == 0 {
		return nil
	}
	why := m.Missing()
	switch {
	case dry:
		fmt.Fprintln(stdout, "would run:")
	case why != "":
		fmt.Fprintf(stdout, "not run (%s); run:\n", why)
	}
	if dry || why != "" {
		for _, cmd := range cmds {
			fmt.Fprintf(stdout, "  %s\n", ShellJoin(cmd))
		}
		return nil
	}
	for _, cmd := range cmds {
		fmt.Fprintf(stdout, "running %s\n", ShellJoin(cmd))
		if err := m.run(ctx, cmd, stdout, stderr); err != nil {
			return &CommandError{Argv: cmd, Err: err}
		}
	}
	return nil
}

// Logs says where the service's output goes: the launchd agent's log file,
// or the journalctl command of the systemd unit.
func (m Manager) Logs(s Service) string {
	if m.Platform == Darwin {
		return LogFile(s)
	}
	return "journalctl --user -u " + UnitName
}

// State asks the manager whether the service is enabled and running: on
// Linux systemctl's own words (is-enabled, is-active), on macOS whether
// the agent is loaded. With the manager Missing both are "unknown", the
// first with why.
func (m Manager) State(ctx context.Context) (enabled, running string) {
	if why := m.Missing(); why != "" {
		return "unknown (" + why + ")", "unknown"
	}
	if m.Platform == Linux {
		return m.query(ctx, "systemctl", "--user", "is-enabled", UnitName), m.query(ctx, "systemctl", "--user", "is-active", UnitName)
	}
	if m.run(ctx, []string{"launchctl", "print", m.Target()}, io.Discard, io.Discard) == nil {
		return "loaded", "see `launchctl print " + m.Target() + "`"
	}
	return "not loaded", "no"
}

// query is the first line a systemctl query prints (it exits non-zero for
// "disabled" and "inactive", which are answers, not errors).
func (m Manager) query(ctx context.Context, argv ...string) string {
	var out bytes.Buffer
	m.run(ctx, argv, &out, io.Discard) //nolint:errcheck // the exit status is part of the answer
	line, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	if line == "" {
		return "unknown"
	}
	return line
}

// ShellJoin is argv as one sh command line, each argument quoted if it
// needs to be.
func ShellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}
