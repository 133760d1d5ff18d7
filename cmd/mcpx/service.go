package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"mcpx.dev/mcpx/deploy"
)

// platformEnv overrides the platform `mcpx service` installs for, so that
// both platforms' output is tested on one machine.
const platformEnv = "MCPX_SERVICE_PLATFORM"

// serviceCmd is `mcpx service install|uninstall|status`.
func serviceCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "service")
	dry := fs.Bool("dry-run", false, "print what would be written and run, change nothing")
	asJSON := fs.Bool("json", false, "status: print it as JSON")
	binary := fs.String("binary", "", "the mcpx binary the service runs (default this one; for a package manager's binary give its stable path, e.g. ~/.nix-profile/bin/mcpx)")
	configPath := fs.String("config", "", "the config file the service reads (default the daemon's: $XDG_CONFIG_HOME/mcpx/config.json)")
	stateFlag := fs.String("state-dir", "", "the service's state directory (default $XDG_STATE_HOME/mcpx)")
	pathFlag := fs.String("path", "", "colon-separated directories on the service's PATH, before /usr/local/bin:/usr/bin:/bin (default this shell's $PATH: servers run by node, npx, uvx or nix need them)")
	writable := fs.String("writable", "", "linux: colon-separated paths the broker's children may write besides the state directory (default $HOME; `none`: only the state directory)")
	tn := tailnetServiceFlags(fs)
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 || !slices.Contains([]string{"install", "uninstall", "status"}, pos[0]) {
		return usageError(c, fs, "want install, uninstall or status")
	}
	p, err := deploy.ParsePlatform(cmpOr(c.getenv(platformEnv), runtime.GOOS))
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx service: %v\n", err)
		return exitFailed
	}
	sv, err := serviceOf(c, *binary, *configPath, *stateFlag, *pathFlag, *writable, tn)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx service: %v\n", err)
		return exitUsage
	}
	home := c.getenv("HOME")
	path := deploy.ServiceFile(p, home, xdgAbs(c, "XDG_CONFIG_HOME"))
	m := serviceManager{c: c, p: p, path: path, uid: os.Getuid()}
	switch pos[0] {
	case "status":
		return m.status(ctx, sv, *asJSON)
	case "uninstall":
		return m.uninstall(ctx, sv, *dry)
	}
	return m.install(ctx, sv, *dry)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func xdgAbs(c *cli, name string) string {
	if d := c.getenv(name); filepath.IsAbs(d) {
		return d
	}
	return ""
}

type tailnetService struct {
	on                          *bool
	hostname, authKeyFile, tags *string
}

func tailnetServiceFlags(fs *flag.FlagSet) tailnetService {
	return tailnetService{
		on:          fs.Bool("tailnet", false, "the service also serves on an embedded tailnet node (`mcpx serve --tailnet`)"),
		hostname:    fs.String("tailnet-hostname", "", "the node's name on the tailnet (default mcpx)"),
		authKeyFile: fs.String("tailnet-authkey-file", "", "file holding the auth key that joins the tailnet"),
		tags:        fs.String("tailnet-tags", "", "comma-separated tags the node advertises, e.g. tag:mcpx"),
	}
}

// serviceOf is the service the flags describe, every path made absolute.
func serviceOf(c *cli, binary, configPath, state, path, writable string, tn tailnetService) (deploy.Service, error) {
	var s deploy.Service
	var err error
	if binary == "" {
		if binary, err = os.Executable(); err != nil {
			return s, fmt.Errorf("finding this binary: %w (give --binary)", err)
		}
		if binary, err = filepath.EvalSymlinks(binary); err != nil {
			return s, fmt.Errorf("finding this binary: %w (give --binary)", err)
		}
	}
	if state == "" {
		if state, err = stateDir(c.getenv); err != nil {
			return s, err
		}
	}
	s = deploy.Service{Binary: binary, StateDir: state, Config: configPath}
	for _, p := range []*string{&s.Binary, &s.StateDir, &s.Config} {
		if *p != "" {
			if *p, err = filepath.Abs(*p); err != nil {
				return s, err
			}
		}
	}
	if path == "" {
		path = c.getenv("PATH")
	}
	for _, d := range filepath.SplitList(path) {
		if filepath.IsAbs(d) && !slices.Contains(s.Path, d) && !slices.Contains(filepath.SplitList(deploy.DefaultPath), d) {
			s.Path = append(s.Path, d)
		}
	}
	switch writable {
	case "none":
	case "":
		if home := c.getenv("HOME"); filepath.IsAbs(home) {
			s.Writable = []string{home}
		}
	default:
		s.Writable = filepath.SplitList(writable)
	}
	if *tn.on {
		s.Tailnet = &deploy.Tailnet{Hostname: *tn.hostname, AuthKeyFile: *tn.authKeyFile, Tags: *tn.tags}
		if s.Tailnet.AuthKeyFile != "" {
			if s.Tailnet.AuthKeyFile, err = filepath.Abs(s.Tailnet.AuthKeyFile); err != nil {
				return s, err
			}
		}
	} else if *tn.hostname != "" || *tn.authKeyFile != "" || *tn.tags != "" {
		return s, errors.New("--tailnet-hostname, --tailnet-authkey-file and --tailnet-tags need --tailnet")
	}
	return s, nil
}

// serviceManager drives systemctl or launchctl for one platform.
type serviceManager struct {
	c    *cli
	p    deploy.Platform
	path string // the service definition
	uid  int
}

func (m serviceManager) target() string {
	return "gui/" + strconv.Itoa(m.uid) + "/" + deploy.Label
}

// commands returns what to run after action on the service definition.
func (m serviceManager) commands(action deploy.Action) [][]string {
	if m.p == deploy.Darwin {
		domain := "gui/" + strconv.Itoa(m.uid)
		switch action {
		case deploy.Create:
			return [][]string{{"launchctl", "bootstrap", domain, m.path}}
		case deploy.Update:
			return [][]string{{"launchctl", "bootout", m.target()}, {"launchctl", "bootstrap", domain, m.path}}
		case deploy.Remove:
			return [][]string{{"launchctl", "bootout", m.target()}}
		}
		return nil
	}
	switch action {
	case deploy.Create, deploy.Unchanged:
		return [][]string{{"systemctl", "--user", "daemon-reload"}, {"systemctl", "--user", "enable", "--now", deploy.UnitName}}
	case deploy.Update:
		return [][]string{{"systemctl", "--user", "daemon-reload"}, {"systemctl", "--user", "enable", deploy.UnitName}, {"systemctl", "--user", "restart", deploy.UnitName}}
	case deploy.Remove:
		return [][]string{{"systemctl", "--user", "disable", "--now", deploy.UnitName}}
	}
	return nil
}

// managerMissing says why the service manager cannot be driven here ("" =
// it can): no systemctl/launchctl, or (linux) no user manager to talk to.
func (m serviceManager) managerMissing() string {
	tool := "systemctl"
	if m.p == deploy.Darwin {
		tool = "launchctl"
	}
	if _, err := exec.LookPath(tool); err != nil {
		return tool + " is not on PATH"
	}
	if m.p == deploy.Linux {
		run := xdgAbs(m.c, "XDG_RUNTIME_DIR")
		if run == "" {
			return "$XDG_RUNTIME_DIR is not set: no systemd user manager to talk to"
		}
		if _, err := os.Stat(filepath.Join(run, "systemd", "private")); err != nil {
			return "no systemd user manager runs for this user (" + filepath.Join(run, "systemd", "private") + " is missing; `loginctl enable-linger " + strconv.Itoa(m.uid) + "` keeps one running)"
		}
	}
	return ""
}

// runAll runs cmds, or prints them for the user when dry or when the
// manager is missing. It returns false when one failed.
func (m serviceManager) runAll(ctx context.Context, cmds [][]string, dry bool) bool {
	if len(cmds) == 0 {
		return true
	}
	why := m.managerMissing()
	switch {
	case dry:
		fmt.Fprintln(m.c.stdout, "would run:")
	case why != "":
		fmt.Fprintf(m.c.stdout, "not run (%s); run:\n", why)
	}
	if dry || why != "" {
		for _, cmd := range cmds {
			fmt.Fprintf(m.c.stdout, "  %s\n", shellJoin(cmd))
		}
		return true
	}
	for _, cmd := range cmds {
		fmt.Fprintf(m.c.stdout, "running %s\n", shellJoin(cmd))
		x := exec.CommandContext(ctx, cmd[0], cmd[1:]...)
		x.Stdout, x.Stderr = m.c.stdout, m.c.stderr
		if err := x.Run(); err != nil {
			fmt.Fprintf(m.c.stderr, "mcpx service: %s: %v\n", shellJoin(cmd), err)
			return false
		}
	}
	return true
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strings.TrimSuffix(deploy.ShellExport("x", a)[len("export x="):], "\n")
	}
	return strings.Join(q, " ")
}

func (m serviceManager) part(s deploy.Service) (deploy.Part, *deploy.Records, error) {
	part, err := deploy.ServicePart(m.p, m.path, s)
	if err != nil {
		return part, nil, err
	}
	rec, err := deploy.LoadRecords(s.StateDir)
	return part, rec, err
}

func (m serviceManager) install(ctx context.Context, s deploy.Service, dry bool) int {
	part, rec, err := m.part(s)
	if err != nil {
		fmt.Fprintf(m.c.stderr, "mcpx service install: %v\n", err)
		return exitFailed
	}
	results, err := rec.Install([]deploy.Part{part}, dry)
	if err != nil {
		fmt.Fprintf(m.c.stderr, "mcpx service install: %v\n", err)
		return exitFailed
	}
	r := results[0]
	if r.Action == deploy.Edited {
		fmt.Fprintf(m.c.stderr, "mcpx service install: %s was edited since mcpx wrote it (or was not written by mcpx); left as it is.\n"+
			"Difference (- what mcpx would write, + the file):\n%s"+
			"Merge what you need and remove the file, then install again.\n", m.path, r.Diff)
		return exitToolError // refused, as a config with errors is
	}
	verb := map[deploy.Action]string{deploy.Create: "create", deploy.Update: "update", deploy.Unchanged: "leave unchanged"}[r.Action]
	if dry {
		fmt.Fprintf(m.c.stdout, "would %s %s:\n%s", verb, m.path, indent(part.Want))
	} else {
		fmt.Fprintf(m.c.stdout, "%s %s\n", r.Action, m.path)
	}
	if !m.runAll(ctx, m.commands(r.Action), dry) {
		return exitFailed
	}
	if !dry {
		fmt.Fprintf(m.c.stdout, "logs: %s\n", m.logs(s))
	}
	return exitOK
}

func (m serviceManager) uninstall(ctx context.Context, s deploy.Service, dry bool) int {
	part, rec, err := m.part(s)
	if err != nil {
		fmt.Fprintf(m.c.stderr, "mcpx service uninstall: %v\n", err)
		return exitFailed
	}
	results, err := rec.Uninstall([]deploy.Part{part}, true) // decide first: stop before removing
	if err != nil {
		fmt.Fprintf(m.c.stderr, "mcpx service uninstall: %v\n", err)
		return exitFailed
	}
	switch results[0].Action {
	case deploy.Absent:
		fmt.Fprintf(m.c.stdout, "no service installed at %s\n", m.path)
		return exitOK
	case deploy.Edited:
		fmt.Fprintf(m.c.stderr, "mcpx service uninstall: %s was edited since mcpx wrote it; left as it is (remove it yourself after stopping the service).\n"+
			"Difference (- what mcpx wrote, + the file):\n%s", m.path, results[0].Diff)
		return exitToolError
	}
	if !m.runAll(ctx, m.commands(deploy.Remove), dry) {
		return exitFailed
	}
	if dry {
		fmt.Fprintf(m.c.stdout, "would remove %s\n", m.path)
		return exitOK
	}
	if _, err := rec.Uninstall([]deploy.Part{part}, false); err != nil {
		fmt.Fprintf(m.c.stderr, "mcpx service uninstall: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(m.c.stdout, "removed %s\n", m.path)
	if m.p == deploy.Linux {
		m.runAll(ctx, [][]string{{"systemctl", "--user", "daemon-reload"}}, false)
	}
	return exitOK
}

func (m serviceManager) logs(s deploy.Service) string {
	if m.p == deploy.Darwin {
		return deploy.LogFile(s)
	}
	return "journalctl --user -u " + deploy.UnitName
}

// status prints whether the service is installed (and as mcpx wrote it),
// enabled and running, and where its logs are.
func (m serviceManager) status(ctx context.Context, s deploy.Service, asJSON bool) int {
	part, rec, err := m.part(s)
	if err != nil {
		fmt.Fprintf(m.c.stderr, "mcpx service status: %v\n", err)
		return exitFailed
	}
	results, err := rec.Install([]deploy.Part{part}, true)
	if err != nil {
		fmt.Fprintf(m.c.stderr, "mcpx service status: %v\n", err)
		return exitFailed
	}
	file := map[deploy.Action]string{
		deploy.Create:    "not installed",
		deploy.Unchanged: "installed",
		deploy.Update:    "installed by an older mcpx (`mcpx service install` updates it)",
		deploy.Edited:    "installed, edited by you (or not written by mcpx)",
	}[results[0].Action]
	enabled, running := "unknown", "unknown"
	if why := m.managerMissing(); why != "" {
		enabled, running = "unknown ("+why+")", "unknown"
	} else if m.p == deploy.Linux {
		enabled = managerOutput(ctx, "systemctl", "--user", "is-enabled", deploy.UnitName)
		running = managerOutput(ctx, "systemctl", "--user", "is-active", deploy.UnitName)
	} else {
		if exec.CommandContext(ctx, "launchctl", "print", m.target()).Run() == nil {
			enabled, running = "loaded", "see `launchctl print "+m.target()+"`"
		} else {
			enabled, running = "not loaded", "no"
		}
	}
	if asJSON {
		b, _ := json.MarshalIndent(struct {
			File      string `json:"file"`
			FileState string `json:"fileState"`
			Enabled   string `json:"enabled"`
			Running   string `json:"running"`
			Logs      string `json:"logs"`
		}{m.path, file, enabled, running, m.logs(s)}, "", "  ")
		fmt.Fprintf(m.c.stdout, "%s\n", b)
		return exitOK
	}
	fmt.Fprintf(m.c.stdout, "file     %s: %s\n", m.path, file)
	fmt.Fprintf(m.c.stdout, "enabled  %s\nrunning  %s\nlogs     %s\n", enabled, running, m.logs(s))
	return exitOK
}

// managerOutput is the first line a systemctl query prints (it exits
// non-zero for "disabled" and "inactive", which are answers, not errors).
func managerOutput(ctx context.Context, name string, args ...string) string {
	out, _ := exec.CommandContext(ctx, name, args...).Output()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if line == "" {
		return "unknown"
	}
	return line
}

func indent(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		b.WriteString("    " + line)
	}
	return b.String()
}
