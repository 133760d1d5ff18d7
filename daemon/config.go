package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/paths"
)

// Source says where a config came from, for logs and messages.
type Source struct {
	Path    string // the file read; "" for the built-in config
	Builtin bool
	Looked  string // for the built-in config: the default path that did not exist
}

// Watched is the file whose changes reload the config: the file read, or
// for the built-in config the default path, which a user may write later.
func (s Source) Watched() string {
	if s.Builtin {
		return s.Looked
	}
	return s.Path
}

func (s Source) String() string {
	if s.Builtin {
		return fmt.Sprintf("the built-in demo server; no config at %s", s.Looked)
	}
	return s.Path
}

// LoadConfig reads the config from path; with path "" from the default
// path ($XDG_CONFIG_HOME/mcpx/config.json, read through getenv) if that
// file exists, else the built-in config, which serves the demo server of
// this executable.
func LoadConfig(path string, getenv func(string) string) (*config.Config, Source, error) {
	if path != "" {
		cfg, err := config.Load(path)
		return cfg, Source{Path: path}, err
	}
	def, err := paths.DefaultConfig(getenv)
	if err != nil {
		return nil, Source{}, err
	}
	if _, err := os.Stat(def); err == nil {
		cfg, err := config.Load(def)
		return cfg, Source{Path: def}, err
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, Source{Path: def}, fmt.Errorf("reading config: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, Source{}, fmt.Errorf("finding the mcpx binary for the built-in demo server: %w", err)
	}
	return config.Default(self), Source{Builtin: true, Looked: def}, nil
}

// LogConfig logs, once per load, the servers a config disables and what it
// ignores (config.Config.Warnings).
func LogConfig(log *slog.Logger, cfg *config.Config) {
	for _, name := range cfg.Disabled {
		log.Info("server disabled in the config: not served", "server", name)
	}
	for _, w := range cfg.Warnings {
		log.Warn("config: "+w.Error(), "server", w.Server, "field", w.Field)
	}
}
