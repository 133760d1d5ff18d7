package paths_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/paths"
	"mcpx.dev/mcpx/wire"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDirs(t *testing.T) {
	for _, tt := range []struct {
		env               map[string]string
		state, sock, conf string
	}{
		{map[string]string{"HOME": "/h"}, "/h/.local/state/mcpx", "/h/.local/state/mcpx/mcpx.sock", "/h/.config/mcpx/config.json"},
		{map[string]string{"HOME": "/h", "XDG_RUNTIME_DIR": "/run/u", "XDG_STATE_HOME": "/s", "XDG_CONFIG_HOME": "/c"}, "/s/mcpx", "/run/u/mcpx/mcpx.sock", "/c/mcpx/config.json"},
		{map[string]string{"HOME": "/h", "XDG_RUNTIME_DIR": "rel", "XDG_CONFIG_HOME": "rel"}, "/h/.local/state/mcpx", "/h/.local/state/mcpx/mcpx.sock", "/h/.config/mcpx/config.json"},
	} {
		state, err1 := paths.StateDir(env(tt.env))
		sock, err2 := paths.DefaultSocket(env(tt.env))
		conf, err3 := paths.DefaultConfig(env(tt.env))
		if state != tt.state || sock != tt.sock || conf != tt.conf || err1 != nil || err2 != nil || err3 != nil {
			t.Errorf("%v: state %q sock %q config %q (%v, %v, %v), want %q %q %q", tt.env, state, sock, conf, err1, err2, err3, tt.state, tt.sock, tt.conf)
		}
	}
}

// testEnv is a runtime, state and home directory under dir.
func testEnv(dir string) map[string]string {
	return map[string]string{"XDG_RUNTIME_DIR": filepath.Join(dir, "run"), "XDG_STATE_HOME": filepath.Join(dir, "state"), "HOME": dir}
}

// The fingerprint is of the canonical path: two spellings of one file
// choose one daemon, another file another; no config keeps the default
// paths; a config's socket is under the runtime directory.
func TestOf(t *testing.T) {
	dir := t.TempDir()
	e := testEnv(dir)
	getenv := env(e)
	def, err := paths.Of(getenv, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "run", "mcpx", "mcpx.sock"); def.Socket != want || def.State != filepath.Join(dir, "state", "mcpx") || def.Config != "" {
		t.Errorf("default daemon %+v, want socket %s", def, want)
	}
	a, _ := paths.Of(getenv, filepath.Join(dir, "work.json"))
	b, _ := paths.Of(getenv, filepath.Join(dir, ".", "x", "..", "work.json"))
	o, _ := paths.Of(getenv, filepath.Join(dir, "other.json"))
	if a != b {
		t.Errorf("two spellings of one path: %+v and %+v", a, b)
	}
	if a.Socket == o.Socket || a.State == o.State || a.Socket == def.Socket {
		t.Errorf("work %+v, other %+v, default %+v: want three sockets", a, o, def)
	}
	if !strings.HasPrefix(a.Socket, filepath.Join(dir, "run", "mcpx", "mcpx-")) || filepath.Dir(a.State) != filepath.Join(dir, "state", "mcpx", "daemons") {
		t.Errorf("work daemon %+v: not under the runtime and state directories", a)
	}
	if own, err := paths.Own(getenv, filepath.Join(dir, "work.json")); err != nil || own != a {
		t.Errorf("Own = %+v, %v; want %+v", own, err, a)
	}
	e["MCPX_CONFIG"] = filepath.Join(dir, "work.json")
	if c, _ := paths.Of(getenv, ""); c != a {
		t.Errorf("$MCPX_CONFIG chose %+v, want %+v", c, a)
	}
	delete(e, "XDG_RUNTIME_DIR")
	if c, _ := paths.Of(getenv, ""); c.Socket != filepath.Join(c.State, "mcpx.sock") {
		t.Errorf("no runtime directory: %+v, want the socket in the state directory", c)
	}
}

// writeRecord writes the default daemon's record in e, naming config and pid.
func writeRecord(t *testing.T, e map[string]string, config string, pid int) {
	t.Helper()
	state, _ := paths.StateDir(env(e))
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(wire.DaemonRecord{DaemonInfo: wire.DaemonInfo{Pid: pid, Config: config, State: state}})
	if err := os.WriteFile(filepath.Join(state, wire.RecordFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A config the default daemon serves, by its record, chooses the default
// daemon while its process is alive; once it is gone, the config's own.
func TestOfTheDefaultDaemonsConfig(t *testing.T) {
	dir := t.TempDir()
	e := testEnv(dir)
	work := filepath.Join(dir, "work.json")
	def, _ := paths.Default(env(e))
	own, _ := paths.Own(env(e), work)

	writeRecord(t, e, filepath.Join(dir, "x", "..", "work.json"), os.Getpid())
	if got, err := paths.Of(env(e), work); err != nil || got != (paths.Daemon{Config: work, State: def.State, Socket: def.Socket}) {
		t.Errorf("served by the live default daemon: %+v, %v; want the default daemon's paths", got, err)
	}
	if got, _ := paths.Of(env(e), filepath.Join(dir, "other.json")); got.State == def.State {
		t.Errorf("another config chose the default daemon: %+v", got)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	writeRecord(t, e, work, dead.Process.Pid)
	if got, _ := paths.Of(env(e), work); got != own {
		t.Errorf("the default daemon is dead: %+v, want %+v", got, own)
	}
}

// Serve: the flags given win; --own-socket chooses the fingerprint's
// paths, else the default daemon's.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	getenv := env(testEnv(dir))
	work := filepath.Join(dir, "work.json")
	def, _ := paths.Default(getenv)
	own, _ := paths.Own(getenv, work)
	for _, tt := range []struct {
		name, own, state, sock string
		want                   paths.Daemon
	}{
		{"defaults", "", "", "", def},
		{"given", "", "/s", "/s.sock", paths.Daemon{State: "/s", Socket: "/s.sock"}},
		{"own", work, "", "", own},
		{"own with a state dir", work, "/s", "", paths.Daemon{Config: work, State: "/s", Socket: own.Socket}},
	} {
		if got, err := paths.Serve(getenv, tt.own, tt.state, tt.sock); err != nil || got != tt.want {
			t.Errorf("%s: %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
	if got, err := paths.Serve(env(nil), "", "/s", "/s.sock"); err != nil || got.State != "/s" {
		t.Errorf("no home, both given: %+v, %v", got, err)
	}
}

func TestStateDirs(t *testing.T) {
	dir := t.TempDir()
	getenv := env(testEnv(dir))
	def, _ := paths.Default(getenv)
	b, _ := paths.Own(getenv, filepath.Join(dir, "b.json"))
	a, _ := paths.Own(getenv, filepath.Join(dir, "a.json"))
	for _, d := range []string{a.State, b.State} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{def.State, a.State, b.State}
	slices.Sort(want[1:])
	if got, err := paths.StateDirs(getenv); err != nil || !slices.Equal(got, want) {
		t.Errorf("StateDirs = %q, %v; want %q", got, err, want)
	}
}

// The record is the contract's file; a broken one is an error naming it.
func TestReadRecord(t *testing.T) {
	if paths.RecordFile != wire.RecordFile {
		t.Errorf("paths.RecordFile %q, wire.RecordFile %q", paths.RecordFile, wire.RecordFile)
	}
	dir := t.TempDir()
	if _, err := paths.ReadRecord[wire.DaemonRecord](dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no record: %v", err)
	}
	b, _ := json.Marshal(wire.DaemonRecord{DaemonInfo: wire.DaemonInfo{Pid: 7, Socket: "/s"}, Token: "tok"})
	os.WriteFile(filepath.Join(dir, wire.RecordFile), b, 0o600)
	if rec, err := paths.ReadRecord[wire.DaemonRecord](dir); err != nil || rec.Pid != 7 || rec.Socket != "/s" || rec.Token != "tok" {
		t.Errorf("record %+v, %v", rec, err)
	}
	os.WriteFile(filepath.Join(dir, wire.RecordFile), []byte("{"), 0o600)
	if _, err := paths.ReadRecord[wire.DaemonRecord](dir); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, wire.RecordFile)) {
		t.Errorf("broken record: %v", err)
	}
}
