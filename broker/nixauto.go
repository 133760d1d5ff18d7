package broker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/nixresolve/nixspec"
)

// autoEnvironment is what a server's "environment": "auto" means for a
// child working in dir: dir's flake.nix (its default devShell, as
// flake:path:<dir>), else its shell.nix, else the host ("" dir, the
// daemon's own, is the host too). The file is run by nix as the daemon's
// user, so it must be one config.ReadTrusted would run: owned by this user or
// root and writable by its owner only; else the start fails naming it.
func autoEnvironment(dir string) (string, error) {
	if dir == "" {
		return nixspec.EnvHost, nil
	}
	for _, name := range []string{"flake.nix", "shell.nix"} {
		file := filepath.Join(dir, name)
		fi, err := os.Stat(file)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && fi.IsDir()) {
			continue
		}
		if err == nil {
			err = config.TrustedInfo(fi, os.Getuid())
		}
		if err != nil {
			return "", fmt.Errorf(`environment "auto": %s is not used: %v; fix it, or set the server's environment to "host"`, file, err)
		}
		if name == "flake.nix" {
			return nixspec.EnvFlake + "path:" + dir, nil
		}
		return nixspec.EnvShell + file, nil
	}
	return nixspec.EnvHost, nil
}

// refreshAuto captures again each environment the instances of server (an
// "auto" one) run in, and reports whether any one's variables changed.
func (b *Broker) refreshAuto(ctx context.Context, server string) (bool, error) {
	seen, changed := map[string]bool{}, false
	for _, in := range b.pool.Instances() {
		if in.Server != server || in.Program == nil || in.Program.Environment == "" || seen[in.Program.Environment] {
			continue
		}
		seen[in.Program.Environment] = true
		prev, next, err := b.nix.RefreshEnvironment(ctx, in.Program.Environment)
		if err != nil {
			return false, err
		}
		changed = changed || !maps.Equal(prev.Vars, next.Vars)
	}
	return changed, nil
}
