package daemon_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/daemon"
	"mcpx.dev/mcpx/internal/testing/testenv"
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

// TestReloadChangedHalfWritten: the watch's reload that reads the file
// between a writer's truncate and its write is not refused aloud (no error
// logged, no reload-refused event); one that reads a settled broken file is.
func TestReloadChangedHalfWritten(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	good := `{"servers": {"a": {"command": "true"}}}`
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(broker.Options{Config: cfg, ReapInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	var logs testenv.SyncBuffer
	landing := true // the writer's write lands while the file is read
	load := func() (*config.Config, daemon.Source, error) {
		c, err := config.Load(path)
		if landing {
			if werr := os.WriteFile(path, []byte(good+" "), 0o600); werr != nil {
				t.Error(werr)
			}
		}
		return c, daemon.Source{Path: path}, err
	}
	ctl := daemon.NewControl(slog.New(slog.NewTextHandler(&logs, nil)), b, daemon.Source{Path: path}, load)
	if err := os.WriteFile(path, nil, 0o600); err != nil { // truncated, not yet written
		t.Fatal(err)
	}
	ctl.ReloadChanged(path)
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a half-written file was refused aloud:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "changed while it was read") {
		t.Errorf("the skipped reload is not logged:\n%s", logs.String())
	}
	landing = false
	if err := os.WriteFile(path, []byte(`{"servers": {"a": {"comand": "true"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctl.ReloadChanged(path)
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "comand") {
		t.Errorf("a settled broken file was not refused with its problem:\n%s", logs.String())
	}
}
