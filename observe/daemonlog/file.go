// Package daemonlog is the daemon's log: slog records as JSON lines in a
// rotating file of the state directory, human text on stderr, levels per
// server, and the reading back that `mcpx log` does (GET /v1/log).
//
//	f, err := daemonlog.Open(daemonlog.Options{Dir: filepath.Join(state, "logs")})
//	h := daemonlog.NewHandler(daemonlog.Levels{Level: slog.LevelInfo, Servers: map[string]slog.Level{"github": slog.LevelDebug}},
//		slog.NewJSONHandler(f, opts), slog.NewTextHandler(os.Stderr, opts))
//	log := slog.New(h)
//	err = f.Read(daemonlog.Query{Since: time.Now().Add(-time.Hour), Level: slog.LevelWarn}, func(line []byte) error { ... })
//	lines, stop := f.Follow(q) // records written from now on
//
// # Files
//
// The current file is Dir/mcpx.jsonl (0600 in a 0700 directory). Past
// Options.MaxBytes it is renamed mcpx.1.jsonl, the older ones shifting up
// (mcpx.2.jsonl, ...), and those beyond Options.MaxFiles are removed: the
// directory holds about MaxFiles × MaxBytes at most. A write that fails
// is counted, never retried, and never fails the daemon.
package daemonlog

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultMaxBytes = 10 << 20
	DefaultMaxFiles = 5
)

// Name is the current file's name in Options.Dir.
const Name = "mcpx.jsonl"

// Options configure Open.
type Options struct {
	Dir      string // required; made 0700 if missing
	MaxBytes int64  // rotate past this size; 0 = DefaultMaxBytes
	MaxFiles int    // files kept, the current one included; 0 = DefaultMaxFiles
}

// File is the rotating log file. Write, Read and Follow are safe for
// concurrent use; Close ends it (later writes are dropped).
type File struct {
	opts Options

	mu      sync.Mutex
	f       *os.File           // guarded by mu; nil once closed or after a failed rotation
	size    int64              // guarded by mu
	failed  int64              // guarded by mu; writes lost
	closed  bool               // guarded by mu
	readers map[*follower]bool // guarded by mu
}

// Open opens (or creates) the log in o.Dir, appending to its current file.
func Open(o Options) (*File, error) {
	o.MaxBytes = cmp.Or(o.MaxBytes, DefaultMaxBytes)
	o.MaxFiles = max(cmp.Or(o.MaxFiles, DefaultMaxFiles), 1)
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the log directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(o.Dir, Name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("opening the log: %w", err)
	}
	return &File{opts: o, f: f, size: st.Size(), readers: map[*follower]bool{}}, nil
}

// Write appends p, one or more whole lines (slog handlers write one record
// per call), rotating first if p would take the file past MaxBytes. It
// never fails: a failed write is counted (Failed), so that logging never
// stops the daemon.
func (l *File) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return len(p), nil
	}
	if l.size > 0 && l.size+int64(len(p)) > l.opts.MaxBytes {
		l.rotateLocked()
	}
	if l.f == nil {
		l.failed++
	} else if n, err := l.f.Write(p); err != nil {
		l.failed++
		l.size += int64(n)
	} else {
		l.size += int64(n)
	}
	for fl := range l.readers {
		fl.push(p)
	}
	return len(p), nil
}

// rotateLocked shifts mcpx.jsonl to mcpx.1.jsonl (and so on up), drops the
// files beyond MaxFiles and opens a new current file.
func (l *File) rotateLocked() {
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
	os.Remove(l.path(l.opts.MaxFiles - 1))
	for i := l.opts.MaxFiles - 2; i >= 0; i-- {
		os.Rename(l.path(i), l.path(i+1))
	}
	f, err := os.OpenFile(l.path(0), os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return // counted by the writes that follow
	}
	l.f, l.size = f, 0
}

// path is the i-th file: 0 the current one, then older.
func (l *File) path(i int) string {
	if i == 0 {
		return filepath.Join(l.opts.Dir, Name)
	}
	return filepath.Join(l.opts.Dir, fmt.Sprintf("mcpx.%d.jsonl", i))
}

// Failed returns how many writes were lost to a failing directory or disk.
func (l *File) Failed() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// Close closes the file and ends every follower.
func (l *File) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return net.ErrClosed
	}
	l.closed = true
	for fl := range l.readers {
		fl.end()
	}
	clear(l.readers)
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}

// Query selects records. The zero Query selects all.
type Query struct {
	Since  time.Time  // records at or after; zero = all
	Server string     // only records naming this server; "" = all
	Key    string     // only records naming this scope key ("key"); "" = all
	Level  slog.Level // records at or above (slog.LevelDebug is the lowest)
}

// entry is the part of a JSON record a Query reads.
type entry struct {
	Time   time.Time `json:"time"`
	Level  string    `json:"level"`
	Server string    `json:"server"`
	Key    string    `json:"key"`
}

// Match reports whether the JSON record line is selected by q. A line
// that is not a record (a torn write) is not.
func (q Query) Match(line []byte) bool {
	var e entry
	if json.Unmarshal(line, &e) != nil {
		return false
	}
	var lv slog.Level
	if lv.UnmarshalText([]byte(e.Level)) != nil {
		return false
	}
	return lv >= q.Level && (q.Server == "" || e.Server == q.Server) && (q.Key == "" || e.Key == q.Key) && !e.Time.Before(q.Since)
}

// maxLine bounds one record read back; a longer line is skipped.
const maxLine = 1 << 20

// Read calls fn with each kept record q selects, oldest first, each line
// without its newline. fn must not keep line. An error of fn ends Read and
// is returned.
func (l *File) Read(q Query, fn func(line []byte) error) error {
	for i := l.opts.MaxFiles - 1; i >= 0; i-- {
		if err := readFile(l.path(i), q, fn); err != nil {
			return err
		}
	}
	return nil
}

func readFile(path string, q Query, fn func([]byte) error) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // rotated away meanwhile, or never written
	}
	if err != nil {
		return fmt.Errorf("reading the log: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var buf []byte
	tooLong := false
	for {
		part, err := r.ReadSlice('\n')
		if len(buf)+len(part) > maxLine {
			tooLong, buf = true, buf[:0]
		} else if !tooLong {
			buf = append(buf, part...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // the rest of a long line
		}
		line := bytes.TrimSuffix(buf, []byte("\n"))
		if !tooLong && len(line) > 0 && (err == nil || err == io.EOF) && q.Match(line) {
			if ferr := fn(line); ferr != nil {
				return ferr
			}
		}
		buf, tooLong = buf[:0], false
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the log: %w", err)
		}
	}
}

// ParseLevel reads a level name (debug, info, warn, error; any case).
func ParseLevel(s string) (slog.Level, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(strings.ToUpper(s))); err != nil {
		return 0, fmt.Errorf("unknown level %q: use debug, info, warn or error", s)
	}
	return lv, nil
}
