package deploy

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// The flows of `mcpx service install|uninstall|status` over a Manager:
// the service definition written as a Part (never over the user's
// edits), then the manager's commands for what changed. Each says what it
// does on stdout as it goes (RunAll's lines among them) and returns what
// stopped it.

// EditedError is a service definition the user edited since mcpx wrote
// it (or mcpx never wrote): it is left as it is, and neither installed
// over nor removed.
type EditedError struct {
	Path string
	// Diff is the difference: - what mcpx would write (or wrote), + the
	// file.
	Diff string
	// Uninstall: it was to be removed.
	Uninstall bool
}

func (e *EditedError) Error() string {
	if e.Uninstall {
		return fmt.Sprintf("%s was edited since mcpx wrote it; left as it is (remove it yourself after stopping the service).\n"+
			"Difference (- what mcpx wrote, + the file):\n%s", e.Path, e.Diff)
	}
	return fmt.Sprintf("%s was edited since mcpx wrote it (or was not written by mcpx); left as it is.\n"+
		"Difference (- what mcpx would write, + the file):\n%s"+
		"Merge what you need and remove the file, then install again.", e.Path, e.Diff)
}

// CommandError is a command of the service manager that failed (RunAll).
type CommandError struct {
	Argv []string
	Err  error
}

func (e *CommandError) Error() string { return ShellJoin(e.Argv) + ": " + e.Err.Error() }
func (e *CommandError) Unwrap() error { return e.Err }

// part is s's service definition at m.Path, and the records of what mcpx
// wrote, kept in s's state directory.
func (m Manager) part(s Service) (Part, *Records, error) {
	part, err := ServicePart(m.Platform, m.Path, s)
	if err != nil {
		return part, nil, err
	}
	rec, err := LoadRecords(s.StateDir)
	return part, rec, err
}

// InstallService writes s's service definition at m.Path and runs what
// the manager needs after (Commands: load and start it, or reload and
// restart it; on Linux an unchanged unit is enabled again), then says
// where the logs are. dry writes and runs nothing and says what it would
// write and run. A definition the user edited is an *EditedError and
// nothing is run; a command that fails is a *CommandError.
func (m Manager) InstallService(ctx context.Context, s Service, dry bool, stdout, stderr io.Writer) error {
	part, rec, err := m.part(s)
	if err != nil {
		return err
	}
	results, err := rec.Install([]Part{part}, dry)
	if err != nil {
		return err
	}
	r := results[0]
	if r.Action == Edited {
		return &EditedError{Path: m.Path, Diff: r.Diff}
	}
	verb := map[Action]string{Create: "create", Update: "update", Unchanged: "leave unchanged"}[r.Action]
	if dry {
		fmt.Fprintf(stdout, "would %s %s:\n%s", verb, m.Path, indent(part.Want))
	} else {
		fmt.Fprintf(stdout, "%s %s\n", r.Action, m.Path)
	}
	if err := m.RunAll(ctx, m.Commands(r.Action), dry, stdout, stderr); err != nil {
		return err
	}
	if !dry {
		fmt.Fprintf(stdout, "logs: %s\n", m.Logs(s))
	}
	return nil
}

// UninstallService stops and unloads the service (Commands(Remove)),
// then removes its definition, if it is as mcpx wrote it, and has the
// manager reload. dry removes and runs nothing and says what it would. No
// definition is not an error: it says so. An edited one is an
// *EditedError, and nothing is stopped or removed. removed reports that
// the definition is gone: an error with it is the manager's reload, after
// the fact.
func (m Manager) UninstallService(ctx context.Context, s Service, dry bool, stdout, stderr io.Writer) (removed bool, err error) {
	part, rec, err := m.part(s)
	if err != nil {
		return false, err
	}
	results, err := rec.Uninstall([]Part{part}, true) // decide first: stop before removing
	if err != nil {
		return false, err
	}
	switch results[0].Action {
	case Absent:
		fmt.Fprintf(stdout, "no service installed at %s\n", m.Path)
		return false, nil
	case Edited:
		return false, &EditedError{Path: m.Path, Diff: results[0].Diff, Uninstall: true}
	}
	if err := m.RunAll(ctx, m.Commands(Remove), dry, stdout, stderr); err != nil {
		return false, err
	}
	if dry {
		fmt.Fprintf(stdout, "would remove %s\n", m.Path)
		return false, nil
	}
	if _, err := rec.Uninstall([]Part{part}, false); err != nil {
		return false, err
	}
	fmt.Fprintf(stdout, "removed %s\n", m.Path)
	return true, m.RunAll(ctx, m.Reload(), false, stdout, stderr)
}

// ServiceStatus is whether the service is installed (and as mcpx wrote
// it), enabled and running, and where its logs are.
type ServiceStatus struct {
	File      string `json:"file"`      // the service definition
	FileState string `json:"fileState"` // installed, not installed, older, edited
	Enabled   string `json:"enabled"`   // Manager.State's
	Running   string `json:"running"`
	Logs      string `json:"logs"` // Manager.Logs
}

// Status says whether s is installed at m.Path, as mcpx would write it
// now, and asks the manager whether it is enabled and running.
func (m Manager) Status(ctx context.Context, s Service) (ServiceStatus, error) {
	part, rec, err := m.part(s)
	if err != nil {
		return ServiceStatus{}, err
	}
	results, err := rec.Install([]Part{part}, true)
	if err != nil {
		return ServiceStatus{}, err
	}
	st := ServiceStatus{File: m.Path, Logs: m.Logs(s)}
	st.FileState = map[Action]string{
		Create:    "not installed",
		Unchanged: "installed",
		Update:    "installed by an older mcpx (`mcpx service install` updates it)",
		Edited:    "installed, edited by you (or not written by mcpx)",
	}[results[0].Action]
	st.Enabled, st.Running = m.State(ctx)
	return st, nil
}

// indent is s with each line indented by four spaces.
func indent(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		b.WriteString("    " + line)
	}
	return b.String()
}
