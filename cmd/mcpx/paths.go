package main

import "mcpx.dev/mcpx/client"

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
// (~/.config/mcpx/config.json). See client.DefaultConfig.
func defaultConfigPath(getenv func(string) string) (string, error) {
	return client.DefaultConfig(getenv)
}
