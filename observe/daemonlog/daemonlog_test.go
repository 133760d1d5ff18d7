package daemonlog_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/observe/daemonlog"
)

func open(t *testing.T, o daemonlog.Options) *daemonlog.File {
	t.Helper()
	f, err := daemonlog.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func lines(t *testing.T, f *daemonlog.File, q daemonlog.Query) []string {
	t.Helper()
	var out []string
	if err := f.Read(q, func(l []byte) error { out = append(out, string(l)); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRotation: the directory stays bounded (MaxFiles files of about
// MaxBytes), the newest records are kept, and Read returns them oldest
// first.
func TestRotation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	f := open(t, daemonlog.Options{Dir: dir, MaxBytes: 1000, MaxFiles: 3})
	log := slog.New(slog.NewJSONHandler(f, nil))
	const n = 500
	for i := range n {
		log.Info("record", "i", i)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 3 {
		t.Errorf("%d files, want 3: %v", len(ents), ents)
	}
	for _, e := range ents {
		st, _ := e.Info()
		if st.Size() > 1000 {
			t.Errorf("%s is %d bytes, over MaxBytes", e.Name(), st.Size())
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", e.Name(), st.Mode().Perm())
		}
	}
	got := lines(t, f, daemonlog.Query{})
	if len(got) == 0 || len(got) >= n {
		t.Fatalf("read %d records of %d written, want the newest few", len(got), n)
	}
	for j, l := range got {
		var rec struct{ I int }
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		if want := n - len(got) + j; rec.I != want {
			t.Fatalf("record %d is i=%d, want %d (oldest first, the newest kept)", j, rec.I, want)
		}
	}
}

// TestQuery: since, server and level select records.
func TestQuery(t *testing.T) {
	f := open(t, daemonlog.Options{Dir: t.TempDir()})
	log := slog.New(slog.NewJSONHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
	log.Debug("d", "server", "a")
	log.Warn("w", "server", "b")
	log.With("server", "a").Error("e")
	log.Info("i")
	count := func(q daemonlog.Query) int { return len(lines(t, f, q)) }
	if got := count(daemonlog.Query{Level: slog.LevelDebug}); got != 4 {
		t.Errorf("all: %d, want 4", got)
	}
	if got := count(daemonlog.Query{Level: slog.LevelWarn}); got != 2 {
		t.Errorf("warn: %d, want 2", got)
	}
	if got := count(daemonlog.Query{Level: slog.LevelDebug, Server: "a"}); got != 2 {
		t.Errorf("server a: %d, want 2", got)
	}
	if got := count(daemonlog.Query{Since: time.Now().Add(time.Hour)}); got != 0 {
		t.Errorf("since the future: %d, want 0", got)
	}
}

// TestFollow: a follower sees the records written after it began, that
// its query selects, and ends when the file closes.
func TestFollow(t *testing.T) {
	f := open(t, daemonlog.Options{Dir: t.TempDir()})
	log := slog.New(slog.NewJSONHandler(f, nil))
	log.Info("before", "server", "a")
	fw := f.Follow(daemonlog.Query{Server: "a"})
	defer fw.Stop()
	log.Info("after", "server", "a")
	log.Info("other", "server", "b")
	var got []string
	deadline := time.After(10 * time.Second)
	for len(got) < 1 {
		select {
		case <-fw.Ready():
		case <-deadline:
			t.Fatalf("no record followed; got %v", got)
		}
		ls, _, _ := fw.Take()
		for _, l := range ls {
			got = append(got, string(l))
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], `"msg":"after"`) {
		t.Errorf("followed %v, want the one record after, of server a", got)
	}
	f.Close()
	<-fw.Ready()
	if _, _, done := fw.Take(); !done {
		t.Error("follower not done after Close")
	}
}

// TestLevels: a server's level applies to the records that name it, by
// attribute or by a derived logger; the others get the global level.
func TestLevels(t *testing.T) {
	f := open(t, daemonlog.Options{Dir: t.TempDir()})
	h := daemonlog.NewHandler(daemonlog.Levels{Level: slog.LevelInfo, Servers: map[string]slog.Level{"loud": slog.LevelDebug, "quiet": slog.LevelError}},
		slog.NewJSONHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
	log := slog.New(h)
	log.Debug("global debug")                 // dropped
	log.Info("global info")                   // kept
	log.Debug("loud debug", "server", "loud") // kept
	log.With("server", "loud").Debug("loud derived")
	log.Warn("quiet warn", "server", "quiet")              // dropped
	log.With("server", "quiet").Error("quiet error")       // kept
	log.With("server", "quiet").Warn("quiet derived warn") // dropped
	var msgs []string
	for _, l := range lines(t, f, daemonlog.Query{Level: slog.LevelDebug}) {
		var rec struct{ Msg string }
		json.Unmarshal([]byte(l), &rec)
		msgs = append(msgs, rec.Msg)
	}
	if want := "global info,loud debug,loud derived,quiet error"; strings.Join(msgs, ",") != want {
		t.Errorf("logged %v, want %s", msgs, want)
	}
}

// TestLongLine: a record longer than the reader's bound is skipped, and
// the records around it are read.
func TestLongLine(t *testing.T) {
	f := open(t, daemonlog.Options{Dir: t.TempDir()})
	log := slog.New(slog.NewJSONHandler(f, nil))
	log.Info("a")
	log.Info("long", "x", strings.Repeat("y", 2<<20))
	log.Info("b")
	got := lines(t, f, daemonlog.Query{})
	if len(got) != 2 || !strings.Contains(got[0], `"msg":"a"`) || !strings.Contains(got[1], `"msg":"b"`) {
		t.Errorf("read %d records: %.200v", len(got), fmt.Sprint(got))
	}
}

// TestLevelsMostSpecificFirst: a record's level is its session's (the
// scope key it names), else its server's, else the global one, whether the
// key and server come with the record or from a derived logger (issue 35).
func TestLevelsMostSpecificFirst(t *testing.T) {
	f := open(t, daemonlog.Options{Dir: t.TempDir()})
	lv := daemonlog.Levels{Level: slog.LevelWarn,
		Servers:  map[string]slog.Level{"gh": slog.LevelError, "web": slog.LevelDebug},
		Sessions: map[string]slog.Level{"session:dbg": slog.LevelDebug, "lease:quiet": slog.LevelError}}
	log := slog.New(daemonlog.NewHandler(lv, slog.NewJSONHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug})))
	log.Info("global info")                                             // dropped: warn
	log.Warn("gh warn", "server", "gh")                                 // dropped: the server's error
	log.Debug("gh session debug", "server", "gh", "key", "session:dbg") // kept: the session's debug
	log.With("key", "session:dbg").Debug("session derived")             // kept
	log.With("server", "gh").With("key", "session:dbg").Info("both derived")
	log.With("server", "gh").Info("gh other key", "key", "session:x") // dropped: no session level, the server's
	log.Debug("web debug", "server", "web", "key", "session:x")       // kept: the server's
	log.With("server", "web").Warn("web quiet", "key", "lease:quiet") // dropped: the session's error
	var msgs []string
	for _, l := range lines(t, f, daemonlog.Query{Level: slog.LevelDebug}) {
		var rec struct{ Msg string }
		json.Unmarshal([]byte(l), &rec)
		msgs = append(msgs, rec.Msg)
	}
	if want := "gh session debug,session derived,both derived,web debug"; strings.Join(msgs, ",") != want {
		t.Errorf("logged %v, want %s", msgs, want)
	}
}
