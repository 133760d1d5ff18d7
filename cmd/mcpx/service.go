package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
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
	writable := fs.String("writable", "", "linux: colon-separated paths the broker's children may write besides the state directory (default $HOME; \"none\": only the state directory)")
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
	sv, err := serviceOf(c, pos[0] == "install", *binary, *configPath, *stateFlag, *pathFlag, *writable, tn)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx service: %v\n", err)
		return exitUsage
	}
	home := c.getenv("HOME")
	path := deploy.ServiceFile(p, home, xdgAbs(c, "XDG_CONFIG_HOME"))
	m := serviceCLI{c: c, Manager: deploy.Manager{Platform: p, Path: path, UID: os.Getuid(), RuntimeDir: xdgAbs(c, "XDG_RUNTIME_DIR")}}
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
		on:          fs.Bool("tailnet", false, "the service also serves on an embedded tailnet node (as mcpx serve --tailnet)"),
		hostname:    fs.String("tailnet-hostname", "", "the node's name on the tailnet (default mcpx)"),
		authKeyFile: fs.String("tailnet-authkey-file", "", "file holding the auth key that joins the tailnet"),
		tags:        fs.String("tailnet-tags", "", "comma-separated tags the node advertises, e.g. tag:mcpx"),
	}
}

// serviceOf is the service the flags describe, every path made absolute;
// install says it is to be installed (see installedBinary).
func serviceOf(c *cli, install bool, binary, configPath, state, path, writable string, tn tailnetService) (deploy.Service, error) {
	var s deploy.Service
	var err error
	if binary == "" {
		if binary, err = installedBinary(install); err != nil {
			return s, err
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

// serviceCLI is `mcpx service`'s install, uninstall and status: the
// service definition's part (package deploy) and its manager, printed.
type serviceCLI struct {
	c *cli
	deploy.Manager
}

// runAll runs cmds, or prints them (see deploy.Manager.RunAll); it reports
// whether they ran.
func (m serviceCLI) runAll(ctx context.Context, cmds [][]string, dry bool) bool {
	if err := m.RunAll(ctx, cmds, dry, m.c.stdout, m.c.stderr); err != nil {
		fmt.Fprintf(m.c.stderr, "mcpx service: %v\n", err)
		return false
	}
	return true
}

func (m serviceCLI) part(s deploy.Service) (deploy.Part, *deploy.Records, error) {
	part, err := deploy.ServicePart(m.Platform, m.Path, s)
	if err != nil {
		return part, nil, err
	}
	rec, err := deploy.LoadRecords(s.StateDir)
	return part, rec, err
}

func (m serviceCLI) install(ctx context.Context, s deploy.Service, dry bool) int {
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
			"Merge what you need and remove the file, then install again.\n", m.Path, r.Diff)
		return exitToolError // refused, as a config with errors is
	}
	verb := map[deploy.Action]string{deploy.Create: "create", deploy.Update: "update", deploy.Unchanged: "leave unchanged"}[r.Action]
	if dry {
		fmt.Fprintf(m.c.stdout, "would %s %s:\n%s", verb, m.Path, indent(part.Want))
	} else {
		fmt.Fprintf(m.c.stdout, "%s %s\n", r.Action, m.Path)
	}
	if !m.runAll(ctx, m.Commands(r.Action), dry) {
		return exitFailed
	}
	if !dry {
		fmt.Fprintf(m.c.stdout, "logs: %s\n", m.Logs(s))
	}
	return exitOK
}

func (m serviceCLI) uninstall(ctx context.Context, s deploy.Service, dry bool) int {
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
		fmt.Fprintf(m.c.stdout, "no service installed at %s\n", m.Path)
		return exitOK
	case deploy.Edited:
		fmt.Fprintf(m.c.stderr, "mcpx service uninstall: %s was edited since mcpx wrote it; left as it is (remove it yourself after stopping the service).\n"+
			"Difference (- what mcpx wrote, + the file):\n%s", m.Path, results[0].Diff)
		return exitToolError
	}
	if !m.runAll(ctx, m.Commands(deploy.Remove), dry) {
		return exitFailed
	}
	if dry {
		fmt.Fprintf(m.c.stdout, "would remove %s\n", m.Path)
		return exitOK
	}
	if _, err := rec.Uninstall([]deploy.Part{part}, false); err != nil {
		fmt.Fprintf(m.c.stderr, "mcpx service uninstall: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(m.c.stdout, "removed %s\n", m.Path)
	m.runAll(ctx, m.Reload(), false)
	return exitOK
}

// status prints whether the service is installed (and as mcpx wrote it),
// enabled and running, and where its logs are.
func (m serviceCLI) status(ctx context.Context, s deploy.Service, asJSON bool) int {
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
	enabled, running := m.State(ctx)
	if asJSON {
		b, _ := json.MarshalIndent(struct {
			File      string `json:"file"`
			FileState string `json:"fileState"`
			Enabled   string `json:"enabled"`
			Running   string `json:"running"`
			Logs      string `json:"logs"`
		}{m.Path, file, enabled, running, m.Logs(s)}, "", "  ")
		fmt.Fprintf(m.c.stdout, "%s\n", b)
		return exitOK
	}
	fmt.Fprintf(m.c.stdout, "file     %s: %s\n", m.Path, file)
	fmt.Fprintf(m.c.stdout, "enabled  %s\nrunning  %s\nlogs     %s\n", enabled, running, m.Logs(s))
	return exitOK
}

func indent(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		b.WriteString("    " + line)
	}
	return b.String()
}
