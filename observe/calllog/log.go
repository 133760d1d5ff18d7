package calllog

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"mcpx.dev/mcpx/internal/defaults"
)

// Defaults of the Options a caller leaves zero. Those of the config's
// records section are stated in package mcpx.dev/mcpx/internal/defaults,
// which the config reads too.
const (
	DefaultMaxBytes = defaults.RecordsMaxBytes // a file is closed at 16 MiB
	DefaultMaxAge   = defaults.RecordsMaxAge   // records are kept a week
	DefaultMaxFiles = defaults.RecordsMaxFiles // at most 8 files: about 128 MiB
	DefaultBuffer   = 4096                     // records waiting for the writer
	// DefaultBatch is how long the writer lets records gather before it
	// writes them: one wake-up and one write per batch, not per call.
	DefaultBatch = 100 * time.Millisecond
)

// BodyLimit is the largest argument or result a record keeps with bodies on.
const BodyLimit = 64 << 10

// RetryInterval is how long the writer leaves the disk alone after a failed
// open or write; records added meanwhile are counted as failed.
const RetryInterval = 5 * time.Second

// maxOpenFor is the longest a file stays open before the next is begun.
const maxOpenFor = 24 * time.Hour

// Options configures a Log.
type Options struct {
	Dir      string        // required: created (0700) if missing
	MaxBytes int64         // a file is closed at this size; 0 = DefaultMaxBytes
	MaxAge   time.Duration // files whose newest record is older are removed; 0 = DefaultMaxAge
	MaxFiles int           // files kept, the one being written included; 0 = DefaultMaxFiles
	Buffer   int           // records waiting for the writer before Add drops; 0 = DefaultBuffer
	Batch    time.Duration // how long records gather before a write; 0 = DefaultBatch
	Logger   *slog.Logger  // receives the warnings; nil = discard
	Now      func() time.Time
}

// Counters are what the writer did since Open.
type Counters struct {
	Written int64 // records on disk
	Dropped int64 // records dropped because the writer was behind (a full channel)
	Failed  int64 // records lost because the directory or disk failed
	// LastError is the last failure to open or write, while it lasts; ""
	// once writing works again. It may name paths: for the daemon's owner.
	LastError string
}

// Log is the call log of one daemon. Add, Counters and Sync are safe for
// concurrent use; Close ends it. A nil *Log takes no records.
type Log struct {
	opts Options
	log  *slog.Logger
	ch   chan item
	// wake starts a batch (sent by the Add that finds armed false); hurry
	// ends its wait early (a half-full channel, a Sync). Both hold one.
	wake, hurry chan struct{}
	armed       atomic.Bool   // a batch is gathering: no wake needed
	done        chan struct{} // closed by Close: the writer drains ch and ends
	ended       chan struct{} // closed by the writer when it has ended
	once        sync.Once

	written, dropped, failed atomic.Int64
	lastErr                  atomic.Pointer[string]

	// Owned by the writer goroutine.
	buf       bytes.Buffer  // one encoded record
	enc       *json.Encoder // writes to buf
	f         *os.File
	w         *bufio.Writer
	size      int64     // f's size, buffered bytes included
	pending   int64     // records in w's buffer
	opened    time.Time // when f began (its name's time)
	failing   bool      // the last attempt failed; warned once
	retryAt   time.Time // no attempt before this
	pruneNext time.Time
	fresh     bool // the next file is a new one: the last was rotated
}

// item is a record, or a Sync's marker.
type item struct {
	rec    Record
	synced chan struct{}
}

// Open starts a Log writing to opts.Dir. It never fails: a directory that
// cannot be used degrades to a warning and counted losses (see the package
// doc), and calls go on.
func Open(opts Options) *Log {
	opts.MaxBytes = cmp.Or(opts.MaxBytes, DefaultMaxBytes)
	opts.MaxAge = cmp.Or(opts.MaxAge, DefaultMaxAge)
	opts.MaxFiles = cmp.Or(opts.MaxFiles, DefaultMaxFiles)
	opts.Buffer = cmp.Or(opts.Buffer, DefaultBuffer)
	opts.Batch = cmp.Or(opts.Batch, DefaultBatch)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	l := &Log{opts: opts, log: opts.Logger, ch: make(chan item, opts.Buffer),
		wake: make(chan struct{}, 1), hurry: make(chan struct{}, 1), done: make(chan struct{}), ended: make(chan struct{})}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	l.enc = json.NewEncoder(&l.buf)
	l.enc.SetEscapeHTML(false)
	l.log = l.log.With("records", opts.Dir)
	go l.run()
	return l
}

// Dir is the directory the Log writes to.
func (l *Log) Dir() string { return l.opts.Dir }

// Add hands r to the writer and returns at once: if the writer is behind,
// r is dropped and counted. It is a no-op on a nil or closed Log.
func (l *Log) Add(r Record) {
	if l == nil {
		return
	}
	select {
	case <-l.done:
		return
	default:
	}
	select {
	case l.ch <- item{rec: r}:
		l.kick(len(l.ch) >= cap(l.ch)/2)
	default:
		l.dropped.Add(1)
	}
}

// kick starts a batch if none is gathering, and with hurry ends its wait.
func (l *Log) kick(hurry bool) {
	if !l.armed.Load() && l.armed.CompareAndSwap(false, true) {
		signal(l.wake)
	}
	if hurry {
		signal(l.hurry)
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Counters reports what the writer did since Open.
func (l *Log) Counters() Counters {
	if l == nil {
		return Counters{}
	}
	c := Counters{Written: l.written.Load(), Dropped: l.dropped.Load(), Failed: l.failed.Load()}
	if p := l.lastErr.Load(); p != nil {
		c.LastError = *p
	}
	return c
}

// Sync waits until every record added before it is written (or counted as
// lost) and flushed to the file, or until ctx is done.
func (l *Log) Sync(ctx context.Context) error {
	if l == nil {
		return nil
	}
	it := item{synced: make(chan struct{})}
	select {
	case l.ch <- it:
		l.kick(true)
	case <-l.ended:
		return nil // Close wrote everything
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-it.synced:
		return nil
	case <-l.ended:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close writes the records already added, closes the file and ends the
// writer. Records added after Close are ignored. It is safe to call more
// than once.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.once.Do(func() { close(l.done) })
	<-l.ended
	return nil
}

// run is the writer: it sleeps until a record starts a batch, lets the
// batch gather for opts.Batch (less if hurried), then writes it.
func (l *Log) run() {
	defer close(l.ended)
	defer l.closeFile()
	t := time.NewTimer(0)
	<-t.C
	for {
		select {
		case <-l.wake:
		case <-l.done:
			l.drain()
			return
		}
		t.Reset(l.opts.Batch)
		select {
		case <-t.C:
		case <-l.hurry:
			t.Stop()
		case <-l.done:
			t.Stop()
		}
		l.armed.Store(false) // records added from here on start the next batch
		l.drain()
	}
}

// drain handles what is queued without blocking, then flushes.
func (l *Log) drain() {
	for {
		select {
		case it := <-l.ch:
			l.handle(it)
		default:
			l.flush()
			return
		}
	}
}

func (l *Log) handle(it item) {
	if it.synced != nil {
		l.flush()
		close(it.synced)
		return
	}
	l.buf.Reset()
	if err := l.enc.Encode(it.rec.line()); err != nil { // Arguments or Result that is not JSON: a bug of the caller
		l.failed.Add(1)
		l.log.Warn("cannot encode a call record", "server", it.rec.Server, "tool", it.rec.Tool, "err", err)
		return
	}
	b := l.buf.Bytes() // one line, newline included
	if !l.ready(int64(len(b))) {
		l.failed.Add(1)
		return
	}
	l.pending++
	if _, err := l.w.Write(b); err != nil {
		l.lose(fmt.Errorf("writing %s: %w", l.f.Name(), err))
		return
	}
	l.size += int64(len(b))
}

// flush writes the buffered records; they count as written once on disk.
func (l *Log) flush() {
	if l.w == nil || l.pending == 0 {
		return
	}
	if err := l.w.Flush(); err != nil {
		l.lose(fmt.Errorf("writing %s: %w", l.f.Name(), err))
		return
	}
	l.written.Add(l.pending)
	l.pending = 0
	l.recovered()
}

// lose gives up the file after a failed write: the records in its buffer
// are counted as failed, and the next record opens a file again (after
// RetryInterval).
func (l *Log) lose(err error) {
	l.failed.Add(l.pending)
	l.pending = 0
	l.fail(err)
	l.f.Close()
	l.f, l.w, l.size = nil, nil, 0
}

// ready makes sure a file is open with room for n more bytes, rotating and
// pruning as needed. false: the disk is failing; the record is lost.
func (l *Log) ready(n int64) bool {
	now := l.opts.Now()
	if l.f != nil && (l.size+n > l.opts.MaxBytes && l.size > 0 || now.Sub(l.opened) >= l.openFor()) {
		l.closeFile()
		l.pruneNext = time.Time{}
		l.fresh = true
	}
	if l.f == nil {
		if now.Before(l.retryAt) {
			return false
		}
		if err := l.openFile(now); err != nil {
			l.fail(err)
			return false
		}
	}
	if !now.Before(l.pruneNext) {
		l.prune(now)
		l.pruneNext = now.Add(time.Hour)
	}
	return l.f != nil
}

func (l *Log) openFor() time.Duration { return min(maxOpenFor, l.opts.MaxAge) }

// openFile opens the newest file if it is young and small enough and was
// not just rotated, else a new one.
func (l *Log) openFile(now time.Time) error {
	if err := os.MkdirAll(l.opts.Dir, 0o700); err != nil {
		return fmt.Errorf("creating the records directory: %w", err)
	}
	name, began := "", now
	if files, err := list(l.opts.Dir); err == nil && len(files) > 0 && !l.fresh {
		last := files[len(files)-1]
		if fi, err := os.Stat(last.path); err == nil && fi.Size() < l.opts.MaxBytes && now.Sub(last.began) < l.openFor() && !last.began.After(now) {
			name, began = last.path, last.began
		}
	}
	if name == "" {
		name = filepath.Join(l.opts.Dir, fileName(now))
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening a records file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("opening a records file: %w", err)
	}
	l.f, l.w, l.size, l.opened, l.fresh = f, bufio.NewWriterSize(f, 64<<10), fi.Size(), began, false
	return nil
}

func (l *Log) closeFile() {
	if l.f == nil {
		return
	}
	l.flush()
	if l.f != nil {
		l.f.Close()
		l.f, l.w, l.size = nil, nil, 0
	}
}

// fail notes a failure of the directory or disk, warns once per run of
// failures, and leaves the disk alone for RetryInterval.
func (l *Log) fail(err error) {
	msg := err.Error()
	l.lastErr.Store(&msg)
	l.retryAt = l.opts.Now().Add(RetryInterval)
	if !l.failing {
		l.failing = true
		l.log.Warn("call records are not being written; calls go on unrecorded", "err", err)
	}
}

func (l *Log) recovered() {
	if l.failing {
		l.failing = false
		l.lastErr.Store(nil)
		l.log.Info("call records are being written again")
	}
}

// prune removes closed files past MaxAge, then the oldest beyond MaxFiles.
func (l *Log) prune(now time.Time) {
	files, err := list(l.opts.Dir)
	if err != nil {
		return
	}
	current := ""
	if l.f != nil {
		current = l.f.Name()
	}
	keep := files[:0]
	for _, f := range files {
		if f.path == current {
			keep = append(keep, f)
			continue
		}
		if fi, err := os.Stat(f.path); err == nil && now.Sub(fi.ModTime()) > l.opts.MaxAge {
			l.remove(f.path)
			continue
		}
		keep = append(keep, f)
	}
	for len(keep) > l.opts.MaxFiles && keep[0].path != current {
		l.remove(keep[0].path)
		keep = keep[1:]
	}
}

func (l *Log) remove(path string) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		l.log.Warn("cannot remove an old records file", "file", path, "err", err)
	}
}

// The files' names sort by when they began.
const (
	filePrefix = "calls-"
	fileSuffix = ".jsonl"
	fileTime   = "20060102T150405.000000000Z"
)

func fileName(t time.Time) string { return filePrefix + t.UTC().Format(fileTime) + fileSuffix }

type file struct {
	path  string
	began time.Time
}

// list returns dir's records files, oldest first. Other files are ignored.
func list(dir string) ([]file, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []file
	for _, e := range ents {
		ts, ok := strings.CutPrefix(e.Name(), filePrefix)
		ts, ok2 := strings.CutSuffix(ts, fileSuffix)
		if !ok || !ok2 || !e.Type().IsRegular() {
			continue
		}
		t, err := time.Parse(fileTime, ts)
		if err != nil {
			continue
		}
		out = append(out, file{filepath.Join(dir, e.Name()), t})
	}
	slices.SortFunc(out, func(a, b file) int { return a.began.Compare(b.began) })
	return out, nil
}
