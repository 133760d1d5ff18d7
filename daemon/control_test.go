package daemon_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/broker/config"
	"mcpx.dev/mcpx/daemon"
	"mcpx.dev/mcpx/internal/testenv"
)

// TestWatchDefaultConfigAppears (real-use 1, 2): a daemon serving the
// built-in config because the default file did not exist watches that
// path; writing it later reloads it and makes it the config in force, and
// the watch keeps going after a reload of another trigger.
func TestWatchDefaultConfigAppears(t *testing.T) {
	home := t.TempDir()
	getenv := func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return home
		}
		return ""
	}
	load := func() (*config.Config, daemon.Source, error) { return daemon.LoadConfig("", getenv) }
	cfg, src, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if !src.Builtin {
		t.Fatalf("source %v; want the built-in config", src)
	}
	b, err := broker.New(broker.Options{Config: cfg, ReapInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	ctl := daemon.NewControl(slog.New(slog.DiscardHandler), b, src, load)
	if got := ctl.Config(); got != "" {
		t.Errorf("Config() = %q before any file; want \"\"", got)
	}
	path := src.Watched()
	if want := filepath.Join(home, "mcpx", "config.json"); path != want {
		t.Fatalf("Watched() = %q; want %q", path, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	first := daemon.StampOf(path) // before the file is written, as WatchActor takes it
	go func() {
		defer close(done)
		daemon.WatchConfig(ctx, path, first, 5*time.Millisecond, 20*time.Millisecond, slog.New(slog.DiscardHandler), func() { ctl.Reload("config file") })
	}()
	defer func() { cancel(); <-done }()

	testenv.Mkdir(t, filepath.Dir(path))
	write := func(servers string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(`{"servers": {`+servers+`}}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`"a": {"command": "true"}`)
	testenv.WaitFor(t, "the new file to be in force", func() bool { return slices.Contains(b.ServerNames(), "a") })
	if got := ctl.Config(); got != path {
		t.Errorf("Config() = %q after the reload; want %q", got, path)
	}
	// A reload by the API, then an edit: still watched.
	if _, err := ctl.Reload("api"); err != nil {
		t.Fatal(err)
	}
	write(`"a": {"command": "true"}, "b": {"command": "true"}`)
	testenv.WaitFor(t, "the edit after a reload", func() bool { return slices.Contains(b.ServerNames(), "b") })
}
