package main

import (
	"cmp"
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
	p, err := deploy.ParsePlatform(cmp.Or(c.getenv(platformEnv), runtime.GOOS))
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
	m := deploy.Manager{Platform: p, Path: path, UID: os.Getuid(), RuntimeDir: xdgAbs(c, "XDG_RUNTIME_DIR")}
	switch pos[0] {
	case "status":
		st, err := m.Status(ctx, sv)
		if err != nil {
			return serviceResult(c, "status", err)
		}
		return printServiceStatus(c, st, *asJSON)
	case "uninstall":
		removed, err := m.UninstallService(ctx, sv, *dry, c.stdout, c.stderr)
		if removed && err != nil { // the manager's reload, after the unit is gone
			fmt.Fprintf(c.stderr, "mcpx service: %v\n", err)
			return exitOK
		}
		return serviceResult(c, "uninstall", err)
	}
	return serviceResult(c, "install", m.InstallService(ctx, sv, *dry, c.stdout, c.stderr))
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
// install says it is to be installed (see deploy.Executable).
func serviceOf(c *cli, install bool, binary, configPath, state, path, writable string, tn tailnetService) (deploy.Service, error) {
	var s deploy.Service
	var err error
	if binary == "" {
		if binary, err = deploy.Executable(install); err != nil {
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

// serviceResult is the exit code of `mcpx service <verb>`, err printed:
// a definition the user edited is refused as a config with errors is, a
// failed command of the manager named as such.
func serviceResult(c *cli, verb string, err error) int {
	var edited *deploy.EditedError
	var cmdErr *deploy.CommandError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &edited):
		fmt.Fprintf(c.stderr, "mcpx service %s: %s\n", verb, strings.TrimSuffix(err.Error(), "\n"))
		return exitToolError
	case errors.As(err, &cmdErr):
		fmt.Fprintf(c.stderr, "mcpx service: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(c.stderr, "mcpx service %s: %v\n", verb, err)
	return exitFailed
}

// printServiceStatus prints whether the service is installed (and as mcpx
// wrote it), enabled and running, and where its logs are.
func printServiceStatus(c *cli, st deploy.ServiceStatus, asJSON bool) int {
	if asJSON {
		b, _ := json.MarshalIndent(st, "", "  ")
		fmt.Fprintf(c.stdout, "%s\n", b)
		return exitOK
	}
	fmt.Fprintf(c.stdout, "file     %s: %s\n", st.File, st.FileState)
	fmt.Fprintf(c.stdout, "enabled  %s\nrunning  %s\nlogs     %s\n", st.Enabled, st.Running, st.Logs)
	return exitOK
}

func indent(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		b.WriteString("    " + line)
	}
	return b.String()
}
