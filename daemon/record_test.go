package daemon_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/daemon"
	"mcpx.dev/mcpx/internal/atomicfile"
	"mcpx.dev/mcpx/internal/paths"
	"mcpx.dev/mcpx/wire"
)

// TestRecordStaleAndLive: the record and the token file are written 0600;
// a record of another daemon that still serves (its pid alive, its socket
// answering) is not replaced, one of a dead daemon is; RemoveRecord
// removes only this process's.
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
	if err := daemon.WriteRecord(info, "mine"); err != nil {
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
	if err := daemon.WriteRecord(info, "x"); err == nil || !strings.Contains(err.Error(), "another daemon") {
		t.Errorf("writing over a live daemon's record: %v", err)
	}
	var logs bytes.Buffer
	daemon.RemoveRecord(slog.New(slog.NewTextHandler(&logs, nil)), state)
	if rec, _ := paths.ReadRecord[wire.DaemonRecord](state); rec == nil || rec.Pid != other.Pid {
		t.Errorf("RemoveRecord removed another daemon's record: %+v", rec)
	}

	// A dead daemon's record: its pid is gone.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	other.Pid = dead.Process.Pid
	put(other)
	if err := daemon.WriteRecord(info, "new"); err != nil {
		t.Errorf("replacing a dead daemon's record: %v", err)
	}
	if rec, _ := paths.ReadRecord[wire.DaemonRecord](state); rec == nil || rec.Token != "new" {
		t.Errorf("record %+v, want the new one", rec)
	}
	daemon.RemoveRecord(slog.New(slog.NewTextHandler(&logs, nil)), state)
	for _, name := range []string{wire.RecordFile, wire.TokenFile} {
		if _, err := os.Stat(filepath.Join(state, name)); !os.IsNotExist(err) {
			t.Errorf("%s after RemoveRecord: %v", name, err)
		}
	}
	if logs.Len() > 0 {
		t.Errorf("RemoveRecord logged:\n%s", logs.String())
	}
}
