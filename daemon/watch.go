package daemon

import (
	"context"
	"io/fs"
	"log/slog"
	"os"
	"syscall"
	"time"
)

// The config watch: the daemon reloads its config file when it changes on
// disk, as SIGHUP and `mcpx reload` do (Control.Reload). It polls the
// file's stat rather than using inotify: portable, no dependency, and a
// rename over the file (how editors and config managers save) is seen as a
// new inode at the path, as is a re-pointed symlink. Polling the path, not
// the file, also sees a file that did not exist when the watch began (the
// default config a user writes after the daemon autostarted). A change is acted on
// once the stat has held still for ConfigSettle, so an editor's
// write-then-rename, or a save in several writes, is one reload.
const (
	ConfigPoll   = 250 * time.Millisecond
	ConfigSettle = 200 * time.Millisecond
)

// Stamp is what the watch compares: a file's identity and content stamp.
type Stamp struct {
	ok         bool
	dev, ino   uint64
	size       int64
	mtime      int64
	mode       fs.FileMode
	statErrStr string
}

// StampOf is the stamp of the file at path now.
func StampOf(path string) Stamp {
	fi, err := os.Stat(path)
	if err != nil {
		return Stamp{statErrStr: err.Error()}
	}
	st := Stamp{ok: true, size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: fi.Mode()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.dev, st.ino = uint64(sys.Dev), uint64(sys.Ino)
	}
	return st
}

// WatchConfig calls reload each time the stamp of path moves from last and
// then holds still for settle, polling every poll, until ctx ends. A file
// that appears is a change like any other. A file
// that is gone (between an editor's delete and create, or removed) keeps
// the running config, with one warning.
func WatchConfig(ctx context.Context, path string, last Stamp, poll, settle time.Duration, log *slog.Logger, reload func()) {
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
			if st := StampOf(path); st != last {
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
