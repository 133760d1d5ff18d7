package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/daemon"
	"mcpx.dev/mcpx/internal/atomicfile"
	"mcpx.dev/mcpx/internal/paths"
	"mcpx.dev/mcpx/wire"
)

// TestRecordStaleAndLive: the record and the token file are written 0600;
// a record of another daemon that still serves (its pid alive, its socket
// answering) is not replaced, one of a dead daemon is; Remove removes
// only this process's.
func TestRecordStaleAndLive(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	os.Mkdir(state, 0o700)
	sock := filepath.Join(dir, "other.sock")
	ln, err := net.Listen("unix", sock) // the other daemon's socket: it answers
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	info := daemon.Info(state, filepath.Join(dir, "mcpx.sock"), nil, daemon.Source{Path: "c.json"}, "test")
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	mine, err := daemon.PublishRecord(log, info, "mine")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := paths.ReadRecord[wire.DaemonRecord](state)
	if err != nil || rec.Pid != os.Getpid() || rec.Token != "mine" || rec.Config != "c.json" || rec.URL != "" {
		t.Fatalf("record %+v, %v", rec, err)
	}
	for _, name := range []string{wire.RecordFile, wire.TokenFile} {
		if fi, err := os.Stat(filepath.Join(state, name)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v; want mode 0600", name, fi.Mode(), err)
		}
	}

	// Another daemon's live record: our parent's pid (alive), its socket answering.
	other := *rec
	other.Pid, other.Socket = os.Getppid(), sock
	put := func(r wire.DaemonRecord) {
		doc, _ := json.Marshal(r)
		if err := atomicfile.Write(filepath.Join(state, wire.RecordFile), doc, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	put(other)
	if _, err := daemon.PublishRecord(log, info, "x"); err == nil || !strings.Contains(err.Error(), "another daemon") {
		t.Errorf("writing over a live daemon's record: %v", err)
	}
	mine.Remove()
	if rec, _ := paths.ReadRecord[wire.DaemonRecord](state); rec == nil || rec.Pid != other.Pid {
		t.Errorf("Remove removed another daemon's record: %+v", rec)
	}

	// A dead daemon's record: its pid is gone.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	other.Pid = dead.Process.Pid
	put(other)
	renewed, err := daemon.PublishRecord(log, info, "new")
	if err != nil {
		t.Fatalf("replacing a dead daemon's record: %v", err)
	}
	if rec, _ := paths.ReadRecord[wire.DaemonRecord](state); rec == nil || rec.Token != "new" {
		t.Errorf("record %+v, want the new one", rec)
	}
	renewed.Remove()
	for _, name := range []string{wire.RecordFile, wire.TokenFile} {
		if _, err := os.Stat(filepath.Join(state, name)); !os.IsNotExist(err) {
			t.Errorf("%s after Remove: %v", name, err)
		}
	}
	if logs.Len() > 0 {
		t.Errorf("Remove logged:\n%s", logs.String())
	}
}

// TestRecordRewrite: after a reload puts another config in force, the
// record names it, with this daemon's token and pid as before; the
// built-in config is named "".
func TestRecordRewrite(t *testing.T) {
	state := t.TempDir()
	var logs bytes.Buffer
	info := daemon.Info(state, filepath.Join(state, "mcpx.sock"), nil, daemon.Source{Builtin: true, Looked: "/c/config.json"}, "test")
	rec, err := daemon.PublishRecord(slog.New(slog.NewTextHandler(&logs, nil)), info, "tok")
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Remove()
	for _, src := range []daemon.Source{{Path: "/c/config.json"}, {Path: "/c/other.json"}, {Builtin: true, Looked: "/c/config.json"}} {
		rec.Rewrite(src)
		got, err := paths.ReadRecord[wire.DaemonRecord](state)
		if err != nil || got.Config != src.Path || got.Token != "tok" || got.Pid != os.Getpid() || got.Started != info.Started {
			t.Errorf("after a reload to %v: record %+v, %v; want config %q, the same token, pid and start", src, got, err, src.Path)
		}
	}

	// As serve wires it: a reload that puts a config in force rewrites the record.
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(`{"servers": {"a": {"command": "true"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	load := func() (*config.Config, daemon.Source, error) { return daemon.LoadConfig(path, nil) }
	cfg, src, err := load()
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(broker.Options{Config: cfg, ReapInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	ctl := daemon.NewControl(slog.New(slog.DiscardHandler), b, src, load)
	ctl.AfterReload(rec.Rewrite)
	if _, err := ctl.Reload("api"); err != nil {
		t.Fatal(err)
	}
	if got, err := paths.ReadRecord[wire.DaemonRecord](state); err != nil || got.Config != path {
		t.Errorf("after a reload through the control: record %+v, %v; want config %s", got, err, path)
	}
	if logs.Len() > 0 {
		t.Errorf("Rewrite logged:\n%s", logs.String())
	}
}
