package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/testing/testenv"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
)

// TestServeDrainsInFlightCalls runs `mcpx serve` in-process, starts a call,
// then shuts the daemon down: the call completes, the socket goes, and no
// child is left.
func TestServeDrainsInFlightCalls(t *testing.T) {
	proctest.CheckNoLeaks(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "mcpx.sock")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"servers": map[string]any{"demo": map[string]any{
		"command": exe, "scope": "global",
		"env": map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(t)},
	}}})
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, stopDaemon := context.WithCancel(t.Context())
	defer stopDaemon()
	var daemonErr testenv.SyncBuffer
	served := make(chan int, 1)
	go func() {
		served <- run(ctx, []string{"serve", "--config", cfgPath, "--socket", sock, "--state-dir", filepath.Join(dir, "state")},
			strings.NewReader(""), &testenv.SyncBuffer{}, &daemonErr)
	}()
	testenv.WaitFor(t, "the socket to answer", func() bool { return client.Answers(sock) }) // it exists a moment before it accepts

	var out, errOut bytes.Buffer
	called := make(chan int, 1)
	go func() {
		called <- run(t.Context(), []string{"call", "--broker", sock, "demo.sleep", `{"ms":500}`},
			strings.NewReader(""), &out, &errOut)
	}()
	testenv.WaitFor(t, "the call to reach the child", func() bool { return strings.Contains(daemonErr.String(), "sleeping 500ms") })
	stopDaemon()

	if code := <-called; code != exitOK || strings.TrimSpace(out.String()) != "slept 500ms" {
		t.Errorf("in-flight call: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	if code := <-served; code != exitOK {
		t.Errorf("serve exited %d:\n%s", code, daemonErr.String())
	}
	if _, err := os.Stat(sock); err == nil {
		t.Error("socket left behind")
	}
	if !strings.Contains(daemonErr.String(), "msg=stopped") {
		t.Errorf("no stop in the log:\n%s", daemonErr.String())
	}
}

func TestHuman(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second:                  "0s",
		0:                             "0s",
		45 * time.Second:              "45s",
		3*time.Minute + 2*time.Second: "3m02s",
		2*time.Hour + 5*time.Minute:   "2h05m",
		76 * time.Hour:                "3d4h",
	} {
		if got := human(d); got != want {
			t.Errorf("human(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		item string
		want string
	}{
		{`{"type":"text","text":"hi\n"}`, "hi"},
		{`{"type":"image","mimeType":"image/png","data":"AAECAw=="}`, "[image image/png, 4 bytes]"},
		{`{"type":"audio","mimeType":"audio/wav","data":"AAE="}`, "[audio audio/wav, 2 bytes]"},
		{`{"type":"resource_link","uri":"file:///a","name":"a"}`, "[resource link file:///a (a)]"},
		{`{"type":"resource","resource":{"uri":"demo://r","mimeType":"text/plain","text":"abc\n"}}`, "abc"},
		{`{"type":"resource","resource":{"uri":"demo://b","mimeType":"application/octet-stream","blob":"AAECAw=="}}`, "[resource demo://b application/octet-stream, 4 bytes]"},
		{`{"type":"hologram"}`, "[hologram content]"},
	}
	for _, tt := range tests {
		var item contentItem
		if err := json.Unmarshal([]byte(tt.item), &item); err != nil {
			t.Fatal(err)
		}
		if got := describe(item); got != tt.want {
			t.Errorf("describe(%s) = %q, want %q", tt.item, got, tt.want)
		}
	}
}

func TestParseFlagsInterspersed(t *testing.T) {
	c := &cli{stderr: &bytes.Buffer{}}
	fs := newFlags(c, "call")
	asJSON := fs.Bool("json", false, "")
	pos, _, ok := parseFlags(fs, []string{"demo.echo", "--json", "{}", "--", "--not-a-flag"})
	if !ok || !*asJSON || fmt.Sprint(pos) != "[demo.echo {} --not-a-flag]" {
		t.Errorf("pos %q json %v ok %v", pos, *asJSON, ok)
	}
}

// TestServeReloadsConfigOnSIGHUP: a changed server is replaced, an unchanged
// one keeps its child, and a broken config is refused with the old one kept.
func TestServeReloadsConfigOnSIGHUP(t *testing.T) {
	proctest.CheckNoLeaks(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "mcpx.sock")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.json")
	writeCfg := func(x string) {
		env := func(v string) map[string]string {
			return map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(t), "X": v}
		}
		doc, _ := json.Marshal(map[string]any{"servers": map[string]any{
			"a": map[string]any{"command": exe, "scope": "global", "env": env(x)},
			"b": map[string]any{"command": exe, "scope": "global", "env": env("same")},
		}})
		if err := os.WriteFile(cfgPath, doc, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeCfg("one")
	ctx, stopDaemon := context.WithCancel(t.Context())
	defer stopDaemon()
	var logs testenv.SyncBuffer
	served := make(chan int, 1)
	go func() {
		served <- run(ctx, []string{"serve", "--config", cfgPath, "--socket", sock, "--state-dir", filepath.Join(dir, "state")},
			strings.NewReader(""), &testenv.SyncBuffer{}, &logs)
	}()
	testenv.WaitFor(t, "the socket to answer", func() bool { return client.Answers(sock) }) // it exists a moment before it accepts
	callOut := func(tool, args string) string {
		var out, errOut bytes.Buffer
		if code := run(t.Context(), []string{"call", "--broker", sock, tool, args}, strings.NewReader(""), &out, &errOut); code != exitOK {
			t.Fatalf("%s: exit %d: %s", tool, code, errOut.String())
		}
		return strings.TrimSpace(out.String())
	}
	if got := callOut("a.env", `{"name":"X"}`); got != "one" {
		t.Fatalf("a.env X = %q", got)
	}
	pidB := callOut("b.pid", `{}`)

	writeCfg("two")
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	testenv.WaitFor(t, "the reload", func() bool { return strings.Contains(logs.String(), "config reloaded") })
	if got := callOut("a.env", `{"name":"X"}`); got != "two" {
		t.Errorf("after reload a.env X = %q, want two", got)
	}
	if got := callOut("b.pid", `{}`); got != pidB {
		t.Errorf("unchanged server b was restarted: pid %s, was %s", got, pidB)
	}

	os.WriteFile(cfgPath, []byte(`{"servers": {"a": {"comand": "x"}}}`), 0o600)
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	// The watch may see the write too, and a read of it half-written (the
	// truncate before the write) must not be refused aloud: the refusal
	// logged names the field.
	testenv.WaitFor(t, "the refused reload", func() bool { return strings.Contains(logs.String(), "keeping the running config") })
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "keeping the running config") && !strings.Contains(line, `unknown field \"comand\"`) {
			t.Errorf("a refused reload does not say why:\n%s", line)
		}
	}
	if got := callOut("a.env", `{"name":"X"}`); got != "two" {
		t.Errorf("after a bad reload a.env X = %q, want the running config's two", got)
	}
	// The refusal is a lifecycle event too, with why for the owner.
	var evOut, evErr bytes.Buffer
	if code := run(t.Context(), []string{"events", "--json", "--broker", sock}, strings.NewReader(""), &evOut, &evErr); code != exitOK {
		t.Fatalf("mcpx events: exit %d: %s", code, evErr.String())
	}
	if !strings.Contains(evOut.String(), `"reload-refused"`) || !strings.Contains(evOut.String(), `signal: `) || !strings.Contains(evOut.String(), `comand`) {
		t.Errorf("mcpx events has no reload-refused event naming the trigger and the problem:\n%s", evOut.String())
	}
	stopDaemon()
	if code := <-served; code != exitOK {
		t.Errorf("serve exited %d:\n%s", code, logs.String())
	}
}
