package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/tsnet"
)

// tsnetNode brings up the CLI's own tailnet node (--tsnet), for a machine
// where no tailscaled runs; the node is closed when the command ends. Its state lives in <state>/tsnet-client, so it joins
// once (with $TS_AUTHKEY, or the login URL it prints) and reconnects on
// later runs. $MCPX_TSNET_CONTROL_URL names another coordination server
// (Headscale, a test control server); $MCPX_TSNET_HOSTNAME its name
// (default mcpx-<hostname>).
func tsnetNode(ctx context.Context, c *cli, state string) (*tsnet.Node, error) {
	if state == "" {
		return nil, fmt.Errorf("--tsnet needs a state directory for its node: set $XDG_STATE_HOME or $HOME")
	}
	dir := filepath.Join(state, "tsnet-client")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the tailnet client's state directory: %w", err)
	}
	host, _ := os.Hostname()
	n := &tsnet.Node{
		Hostname:   cmp.Or(c.getenv("MCPX_TSNET_HOSTNAME"), "mcpx-"+strings.Split(cmp.Or(host, "client"), ".")[0]),
		Dir:        dir,
		ControlURL: c.getenv("MCPX_TSNET_CONTROL_URL"),
		// Warnings only (the login URL): tsnet's own chatter stays out of the CLI's output.
		Logger: slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if _, err := n.Up(ctx); err != nil {
		return nil, fmt.Errorf("--tsnet: %w", err)
	}
	c.closers = append(c.closers, func() { n.Close() })
	return n, nil
}

// remoteCwd is the caller's cwd on a remote broker's machine: --cwd as
// given (a path there, so it must be absolute), else the local cwd through
// the client config's path mappings. A cwd no mapping covers is an error
// saying how to fix it: the broker cannot see this machine's files, and a
// local path sent as is would name a directory that is not the caller's.
func remoteCwd(c *cli, flagValue, local string) (string, error) {
	if flagValue != "" {
		if !strings.HasPrefix(flagValue, "/") {
			return "", fmt.Errorf("--cwd %q: against a broker on another machine, --cwd is a directory on that machine and must be absolute", flagValue)
		}
		return path.Clean(flagValue), nil
	}
	cfg, file, err := clientConfig(c)
	if err != nil {
		return "", err
	}
	m, err := client.NewPathMap(cfg.PathMappings)
	if err != nil {
		return "", fmt.Errorf("client config %s: %w", file, err)
	}
	if remote, ok := m.Map(local); ok {
		return remote, nil
	}
	abs, _ := filepath.EvalSymlinks(local)
	return "", &client.UnmappedError{Dir: cmp.Or(abs, local), Config: file}
}

// clientConfig is the client config ($MCPX_CLIENT_CONFIG, else
// $XDG_CONFIG_HOME/mcpx/client.json) and its path; a missing file is an
// empty config.
func clientConfig(c *cli) (client.Config, string, error) {
	file := c.getenv("MCPX_CLIENT_CONFIG")
	if file == "" {
		var err error
		if file, err = client.DefaultClientConfig(c.getenv); err != nil {
			return client.Config{}, "", err
		}
	}
	cfg, err := client.LoadConfig(file)
	if err != nil {
		return client.Config{}, file, err
	}
	return *cfg, file, nil
}
