package main

import (
	"context"
	"io/fs"
	"log/slog"
	"os"
	"syscall"
	"time"
)

// The config watch: `mcpx serve` reloads its config file when it changes
// on disk, as SIGHUP and `mcpx reload` do (control.reload). It polls the
// file's stat rather than using inotify: portable, no dependency, and a
// rename over the file (how editors and config managers save) is seen as
// a new inode at the path, as is a re-pointed symlink. A change is acted on
// once the stat has held still for configSettle, so an editor's
// write-then-rename, or a save in several writes, is one reload.
const (
	configPoll   = 250 * time.Millisecond
	configSettle = 200 * time.Millisecond
)

// fileStamp is what the watch compares: a file's identity and content stamp.
type fileStamp struct {
	ok         bool
	dev, ino   uint64
	size       int64
	mtime      int64
	mode       fs.FileMode
	statErrStr string
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{statErrStr: err.Error()}
	}
	st := fileStamp{ok: true, size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: fi.Mode()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.dev, st.ino = uint64(sys.Dev), uint64(sys.Ino)
	}
	return st
}

// configWatchActor reloads ctl's config when the file at path changes,
// until interrupted. A file that is gone (between an editor's delete and
// create, or removed) keeps the running config, with one warning.
func configWatchActor(ctl *control, path string, log *slog.Logger) (func() error, func(error)) {
	ctx, cancel := context.WithCancel(context.Background())
	first := stampOf(path) // now, not when the group runs: a change meanwhile is seen
	return func() error {
			watchConfig(ctx, path, first, configPoll, configSettle, log, func() { ctl.reload("config file") }) //nolint:errcheck // logged by reload
			return ctx.Err()
		}, func(error) {
			cancel()
		}
}

// watchConfig calls reload each time the stat of path moves from last and
// then holds still for settle, polling every poll, until ctx ends.
func watchConfig(ctx context.Context, path string, last fileStamp, poll, settle time.Duration, log *slog.Logger, reload func()) {
	t := time.NewTicker(poll)
	defer t.Stop()
	pending := false
	var changed time.Time
	warned := false
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if st := stampOf(path); st != last {
				last, pending, changed = st, true, now
				continue
			}
			if !pending || now.Sub(changed) < settle {
				continue
			}
			pending = false
			if !last.ok {
				if !warned {
					log.Warn("the config file is gone; keeping the running config", "config", path, "err", last.statErrStr)
					warned = true
				}
				continue
			}
			warned = false
			log.Info("the config file changed; reloading", "config", path)
			reload()
		}
	}
}
