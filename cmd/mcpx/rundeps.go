package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"mcpx.dev/mcpx/nixresolve"
	"mcpx.dev/mcpx/scripts"
)

// scriptDeps are where a script's packages come from: the merged
// script.deps, installed sets kept in <state>/deps.
func scriptDeps(c *cli, set scriptSettings, state string) *scripts.Deps {
	d := &scripts.Deps{From: set.deps.From, Packages: set.deps.Packages, Registry: set.deps.Registry,
		Cache: filepath.Join(state, "deps"), Log: c.stderr}
	for _, dir := range set.configDirs {
		d.ConfigManifests = append(d.ConfigManifests, filepath.Join(dir, "package.json"))
	}
	return d
}

// scriptEnvDir is where the execution environments scripts run in are
// captured and cached, apart from the daemon's (<state>/nix), whose
// garbage collection keeps only what its servers use.
const scriptEnvDir = "script-env"

// scriptEnvironment returns the variables of the script's execution
// environment (script.environment) as KEY=value, to come after the
// caller's: none for the host; the variables of a flake's devShell or a
// shell.nix, captured once and cached as a server's are (package
// nixresolve), with the shell's PATH before the caller's. "auto" is cwd's
// flake.nix, else its shell.nix, else the host. A relative shell: file is
// the config file's directory's.
func scriptEnvironment(ctx context.Context, set scriptSettings, cwd, state string, getenv func(string) string) ([]string, error) {
	env, dir := set.environment, set.environmentDir
	if env == "auto" {
		env, dir = "host", cwd
		if fileExists(filepath.Join(cwd, "flake.nix")) {
			env = "flake:path:" + cwd
		} else if fileExists(filepath.Join(cwd, "shell.nix")) {
			env = "shell:" + filepath.Join(cwd, "shell.nix")
		}
	}
	if env == "" || env == "host" {
		return nil, nil
	}
	r, err := nixresolve.New(nixresolve.Options{CacheDir: filepath.Join(state, scriptEnvDir), Dir: dir})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	d, err := r.Environment(ctx, env)
	if err != nil {
		return nil, fmt.Errorf("script.environment: %w", err)
	}
	vars := d.EnvVars()
	for i, kv := range vars {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok && getenv("PATH") != "" {
			vars[i] = "PATH=" + p + string(os.PathListSeparator) + getenv("PATH")
		}
	}
	return vars, nil
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}
