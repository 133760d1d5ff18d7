package daemon_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"mcpx.dev/mcpx/daemon"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestWatchConfig: an editor's save (write a new file, rename it over) is
// one reload, a write in place is one more, and a file that is gone is a
// warning, once, with no reload.
func TestWatchConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs testenv.SyncBuffer
	var reloads atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	first := daemon.StampOf(path)
	go func() {
		defer close(done)
		daemon.WatchConfig(ctx, path, first, 5*time.Millisecond, 30*time.Millisecond, slog.New(slog.NewTextHandler(&logs, nil)), func() { reloads.Add(1) })
	}()
	defer func() { cancel(); <-done }()
	// Write-rename, as editors save: a temporary file, then a rename over.
	tmp := path + ".swp"
	os.WriteFile(tmp, []byte(`{"servers":{}}`), 0o600)
	os.Remove(path) // some editors unlink first: still one change once it settles
	os.Rename(tmp, path)
	testenv.WaitFor(t, "the first reload", func() bool { return reloads.Load() >= 1 })

	// A second change in place: exactly one more, so the save above was one.
	os.WriteFile(path, []byte(`{"servers":{},"pool":{}}`), 0o600)
	testenv.WaitFor(t, "the second reload", func() bool { return reloads.Load() >= 2 })

	os.Remove(path)
	testenv.WaitFor(t, "the warning", func() bool { return strings.Contains(logs.String(), "config file is gone") })
	// Back again: a reload, and only the one warning before it.
	os.WriteFile(path, []byte(`{}`), 0o600)
	testenv.WaitFor(t, "the reload after it came back", func() bool { return reloads.Load() >= 3 })
	if n := reloads.Load(); n != 3 {
		t.Errorf("%d reloads; want 3 (save, write, recreate)", n)
	}
	if n := strings.Count(logs.String(), "config file is gone"); n != 1 {
		t.Errorf("%d warnings about the gone file; want 1:\n%s", n, logs.String())
	}
}
