package main

import (
	"errors"
	"os"
	"path/filepath"

	"mcpx.dev/mcpx/api/client"
)

// Where mcpx keeps things, per the XDG base directory specification: a
// variable that is unset or not absolute is ignored.

// defaultSocket is the daemon's socket path, shared by `mcpx serve` and every
// client: $XDG_RUNTIME_DIR/mcpx/mcpx.sock, else $XDG_STATE_HOME/mcpx/mcpx.sock
// (~/.local/state/mcpx/mcpx.sock). See client.DefaultSocket.
func defaultSocket(getenv func(string) string) (string, error) {
	return client.DefaultSocket(getenv)
}

// stateDir is $XDG_STATE_HOME/mcpx (~/.local/state/mcpx).
func stateDir(getenv func(string) string) (string, error) {
	return client.StateDir(getenv)
}

// defaultConfigPath is $XDG_CONFIG_HOME/mcpx/config.json
// (~/.config/mcpx/config.json).
func defaultConfigPath(getenv func(string) string) (string, error) {
	d := xdgDir(getenv, "XDG_CONFIG_HOME", ".config")
	if d == "" {
		return "", errNoHome
	}
	return filepath.Join(d, "mcpx", "config.json"), nil
}

var errNoHome = errors.New("cannot find the home directory: set $HOME or the XDG_* variables")

// xdgDir returns $name if it is absolute, else $HOME/homeRel (if homeRel is
// not empty), else "".
func xdgDir(getenv func(string) string, name, homeRel string) string {
	if d := getenv(name); filepath.IsAbs(d) {
		return d
	}
	if homeRel == "" {
		return ""
	}
	home := getenv("HOME")
	if !filepath.IsAbs(home) {
		h, err := os.UserHomeDir()
		if err != nil || !filepath.IsAbs(h) {
			return ""
		}
		home = h
	}
	return filepath.Join(home, homeRel)
}
