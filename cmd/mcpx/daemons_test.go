package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// Every command's flags parse: --config, added to every broker client,
// clashes with no command's own flag (a clash panics).
func TestEveryCommandsFlags(t *testing.T) {
	for _, cmd := range commands() {
		if cmd.run == nil || cmd.name == "demo-server" || cmd.name == "hook" {
			continue
		}
		t.Run(cmd.name, func(t *testing.T) {
			run(t.Context(), []string{cmd.name, "-h"}, strings.NewReader(""), io.Discard, io.Discard)
		})
	}
}

// The fingerprint is of the canonical path: two spellings of one file
// choose one daemon, another file another; no config keeps the default
// paths; a config's socket is under the runtime directory.
func TestDaemonOf(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"XDG_RUNTIME_DIR": filepath.Join(dir, "run"), "XDG_STATE_HOME": filepath.Join(dir, "state"), "HOME": dir}
	getenv := func(k string) string { return env[k] }
	def, err := daemonOf(getenv, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "run", "mcpx", "mcpx.sock"); def.socket != want || def.state != filepath.Join(dir, "state", "mcpx") || def.config != "" {
		t.Errorf("default daemon %+v, want socket %s", def, want)
	}
	a, _ := daemonOf(getenv, filepath.Join(dir, "work.json"))
	b, _ := daemonOf(getenv, filepath.Join(dir, ".", "x", "..", "work.json"))
	o, _ := daemonOf(getenv, filepath.Join(dir, "other.json"))
	if a != b {
		t.Errorf("two spellings of one path: %+v and %+v", a, b)
	}
	if a.socket == o.socket || a.state == o.state || a.socket == def.socket {
		t.Errorf("work %+v, other %+v, default %+v: want three sockets", a, o, def)
	}
	if !strings.HasPrefix(a.socket, filepath.Join(dir, "run", "mcpx", "mcpx-")) || filepath.Dir(a.state) != filepath.Join(dir, "state", "mcpx", daemonsDir) {
		t.Errorf("work daemon %+v: not under the runtime and state directories", a)
	}
	env["MCPX_CONFIG"] = filepath.Join(dir, "work.json")
	if e, _ := daemonOf(getenv, ""); e != a {
		t.Errorf("$MCPX_CONFIG chose %+v, want %+v", e, a)
	}
}
