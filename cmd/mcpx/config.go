package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"

	"mcpx.dev/mcpx/broker/config"
)

// configSource says where a config came from, for logs and messages.
type configSource struct {
	path    string // the file read; "" for the built-in config
	builtin bool
	looked  string // for the built-in config: the default path that did not exist
}

func (s configSource) String() string {
	if s.builtin {
		return fmt.Sprintf("the built-in demo server; no config at %s", s.looked)
	}
	return s.path
}

// loadConfig reads the config from path; with path "" from the default path
// if that file exists, else the built-in config serving the demo server.
func loadConfig(path string, getenv func(string) string) (*config.Config, configSource, error) {
	if path != "" {
		cfg, err := config.Load(path)
		return cfg, configSource{path: path}, err
	}
	def, err := defaultConfigPath(getenv)
	if err != nil {
		return nil, configSource{}, err
	}
	if _, err := os.Stat(def); err == nil {
		cfg, err := config.Load(def)
		return cfg, configSource{path: def}, err
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, configSource{path: def}, fmt.Errorf("reading config: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, configSource{}, fmt.Errorf("finding the mcpx binary for the built-in demo server: %w", err)
	}
	return config.Default(self), configSource{builtin: true, looked: def}, nil
}

// configCmd is `mcpx config check|show [--config F]`. check exits 0 and says
// "ok: N servers" and which servers are disabled, or prints every error and
// exits 1 (exitToolError: the command ran and found the config invalid; 2
// stays reserved for usage). Either way the config's warnings go to stderr.
func configCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "config")
	path := fs.String("config", "", "config file (default $XDG_CONFIG_HOME/mcpx/config.json)")
	sources := sourcesFlags(fs)
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if *sources.on {
		if len(pos) > 0 {
			return usageError(c, fs, "--sources takes no `check` or `show`")
		}
		return configSources(ctx, c, sources)
	}
	if len(pos) != 1 || (pos[0] != "check" && pos[0] != "show") {
		return usageError(c, fs, "want `check` or `show`")
	}
	cfg, src, err := loadConfig(*path, c.getenv)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx: %v\n", err)
		if ce := (*config.Error)(nil); errors.As(err, &ce) {
			printWarnings(c, ce.Warnings)
		}
		return exitToolError
	}
	if pos[0] == "check" {
		n := len(cfg.Servers)
		fmt.Fprintf(c.stdout, "ok: %d server%s (%s)\n", n, plural(n), src)
		for _, name := range cfg.Disabled {
			fmt.Fprintf(c.stdout, "disabled: %s (not served)\n", name)
		}
		printWarnings(c, cfg.Warnings)
		return exitOK
	}
	printWarnings(c, cfg.Warnings)
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx: printing config: %v\n", err)
		return exitToolError
	}
	fmt.Fprintf(c.stdout, "%s\n", b)
	return exitOK
}

func printWarnings(c *cli, ws []*config.Problem) {
	for _, w := range ws {
		fmt.Fprintf(c.stderr, "warning: %v\n", w)
	}
}

// logConfig logs, once per load, the servers a config disables and what it
// ignores (config.Config.Warnings).
func logConfig(log *slog.Logger, cfg *config.Config) {
	for _, name := range cfg.Disabled {
		log.Info("server disabled in the config: not served", "server", name)
	}
	for _, w := range cfg.Warnings {
		log.Warn("config: "+w.Error(), "server", w.Server, "field", w.Field)
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
