package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// watchDaemon is an in-process `mcpx serve` for the exec-watch tests: a
// server "w" whose command is bin/srv, a symlink to one of three
// byte-identical #! scripts (a/srv, a/srv2, b/srv) that exec the demo
// server, and a neighbour "n" running the test binary directly.
type watchDaemon struct {
	t       *testing.T
	dir     string
	sock    string
	cfgPath string
	cfg     []byte
	link    string
	logs    *testenv.SyncBuffer
	events  *testenv.SyncBuffer // `mcpx events --follow --json`, running all along
}

func startWatchDaemon(t *testing.T, execWatch string) *watchDaemon {
	proctest.CheckNoLeaks(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	d := &watchDaemon{t: t, dir: dir, sock: filepath.Join(dir, "mcpx.sock"), cfgPath: filepath.Join(dir, "config.json"),
		link: filepath.Join(dir, "bin", "srv"), logs: &testenv.SyncBuffer{}, events: &testenv.SyncBuffer{}}
	script := fmt.Sprintf("#!/bin/sh\nexec %q \"$@\"\n", exe)
	for _, p := range []string{"a/srv", "a/srv2", "b/srv"} {
		testenv.Mkdir(t, filepath.Dir(filepath.Join(dir, p)))
		if err := os.WriteFile(filepath.Join(dir, p), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Mkdir(t, filepath.Join(dir, "bin"))
	d.relink("a/srv")
	env := map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(t)}
	d.cfg, _ = json.Marshal(map[string]any{
		"pool": map[string]any{"execWatch": execWatch},
		"servers": map[string]any{
			"w": map[string]any{"command": d.link, "scope": "global", "env": env},
			"n": map[string]any{"command": exe, "scope": "global", "env": env},
		}})
	if err := os.WriteFile(d.cfgPath, d.cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan int, 1)
	go func() {
		served <- run(ctx, []string{"serve", "--config", d.cfgPath, "--socket", d.sock, "--state-dir", filepath.Join(dir, "state"), "--listen", "off"},
			strings.NewReader(""), &testenv.SyncBuffer{}, d.logs)
	}()
	testenv.WaitFor(t, "the socket to answer", func() bool { return client.Answers(d.sock) })
	evCtx, stopEvents := context.WithCancel(context.Background())
	followed := make(chan int, 1)
	go func() {
		followed <- run(evCtx, []string{"events", "--broker", d.sock, "--follow", "--json"}, strings.NewReader(""), d.events, &testenv.SyncBuffer{})
	}()
	t.Cleanup(func() {
		stopEvents()
		if code := <-followed; code != exitOK {
			t.Errorf("mcpx events --follow exited %d", code)
		}
		stop()
		if code := <-served; code != exitOK {
			t.Errorf("serve exited %d:\n%s", code, d.logs.String())
		}
	})
	return d
}

// relink points bin/srv at target (relative to the daemon's directory),
// replacing the link at once, as `ln -sfn` does.
func (d *watchDaemon) relink(target string) {
	d.t.Helper()
	tmp := d.link + ".new"
	os.Remove(tmp)
	if err := os.Symlink(filepath.Join(d.dir, target), tmp); err != nil {
		d.t.Fatal(err)
	}
	if err := os.Rename(tmp, d.link); err != nil {
		d.t.Fatal(err)
	}
}

func (d *watchDaemon) call(tool, args string) string {
	d.t.Helper()
	var out, errOut bytes.Buffer
	if code := run(d.t.Context(), []string{"call", "--broker", d.sock, tool, args}, strings.NewReader(""), &out, &errOut); code != exitOK {
		d.t.Fatalf("%s: exit %d: %s", tool, code, errOut.String())
	}
	return strings.TrimSpace(out.String())
}

// followed returns the events `mcpx events --follow --json` printed so far.
func (d *watchDaemon) followed() []wire.LifecycleEvent {
	var evs []wire.LifecycleEvent
	sc := bufio.NewScanner(strings.NewReader(d.events.String()))
	for sc.Scan() {
		var ev wire.LifecycleEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			d.t.Fatalf("mcpx events printed %q: %v", sc.Text(), err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// waitEvent waits (bounded) for `mcpx events --follow` to print an event
// after id that matches ok.
func (d *watchDaemon) waitEvent(after uint64, what string, ok func(wire.LifecycleEvent) bool) wire.LifecycleEvent {
	d.t.Helper()
	var found wire.LifecycleEvent
	testenv.WaitFor(d.t, what+" in mcpx events --follow", func() bool {
		for _, ev := range d.followed() {
			if ev.ID > after && ok(ev) {
				found = ev
				return true
			}
		}
		return false
	})
	return found
}

func (d *watchDaemon) lastID() uint64 {
	evs := d.followed()
	if len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].ID
}

// TestExecChangeRestartsTheInstance, on each path that notices a changed
// executable (mcpx reload, the config file changing, the exec watch's
// tick): re-pointing the command's symlink at an identical script in the
// same directory keeps the child; at the same bytes in another directory
// it restarts the instance once (new pid, old pid gone), while a call in
// flight completes and the neighbouring server keeps its child.
func TestExecChangeRestartsTheInstance(t *testing.T) {
	for _, path := range []string{"reload", "config file", "exec watch"} {
		t.Run(strings.ReplaceAll(path, " ", "-"), func(t *testing.T) {
			watch := "off"
			if path == "exec watch" {
				watch = "100ms"
			}
			d := startWatchDaemon(t, watch)
			notice := func(moved int) {
				t.Helper()
				switch path {
				case "reload":
					mark := d.lastID()
					var out, errOut bytes.Buffer
					if code := run(t.Context(), []string{"reload", "--broker", d.sock}, strings.NewReader(""), &out, &errOut); code != exitOK {
						t.Fatalf("mcpx reload: exit %d: %s", code, errOut.String())
					}
					d.waitEvent(mark, "the reload", func(ev wire.LifecycleEvent) bool { return ev.Kind == wire.EventReload && ev.Reason == "api" })
				case "config file":
					// An editor's save: write a new file, rename it over.
					mark := d.lastID()
					tmp := d.cfgPath + ".swp"
					if err := os.WriteFile(tmp, d.cfg, 0o600); err != nil {
						t.Fatal(err)
					}
					if err := os.Rename(tmp, d.cfgPath); err != nil {
						t.Fatal(err)
					}
					d.waitEvent(mark, "the config file's reload", func(ev wire.LifecycleEvent) bool {
						return ev.Kind == wire.EventReload && ev.Reason == "config file"
					})
				case "exec watch":
					testenv.WaitFor(t, "the exec watch to see the move", func() bool {
						return strings.Count(d.logs.String(), "moved but is the same program")+strings.Count(d.logs.String(), "; replacing instance") >= moved
					})
				}
			}

			pid1 := d.call("w.pid", `{}`)
			pidN := d.call("n.pid", `{}`)
			start := d.lastID()

			d.relink("a/srv2")
			notice(1)
			if got := d.call("w.pid", `{}`); got != pid1 {
				t.Fatalf("re-pointing at an identical script in the same directory restarted the child: pid %s -> %s", pid1, got)
			}

			var slowOut, slowErr bytes.Buffer
			slow := make(chan int, 1)
			go func() {
				slow <- run(context.Background(), []string{"call", "--broker", d.sock, "w.sleep", `{"ms":1500}`}, strings.NewReader(""), &slowOut, &slowErr)
			}()
			testenv.WaitFor(t, "the slow call to reach the child", func() bool { return strings.Contains(d.logs.String(), "sleeping 1500ms") })
			d.relink("b/srv")
			notice(2)
			restart := d.waitEvent(start, "the restart", func(ev wire.LifecycleEvent) bool { return ev.Kind == wire.EventRestart })
			if restart.Server != "w" || restart.Reason != "executable changed: location changed" || restart.Path != d.link || strconv.Itoa(restart.Pid) != pid1 {
				t.Errorf("restart event %+v; want server w, reason \"executable changed: location changed\", path %s, pid %s", restart, d.link, pid1)
			}
			ready := d.waitEvent(restart.ID, "the replacement's ready", func(ev wire.LifecycleEvent) bool { return ev.Kind == wire.EventReady && ev.Server == "w" })
			if code := <-slow; code != exitOK || slowOut.String() != "slept 1500ms\n" {
				t.Errorf("the call in flight during the restart: exit %d, %q, %s", code, slowOut.String(), slowErr.String())
			}
			if got := d.call("w.pid", `{}`); got == pid1 || got != strconv.Itoa(ready.Pid) {
				t.Errorf("after the restart w runs pid %s; want the replacement's %d, not %s", got, ready.Pid, pid1)
			}
			old, _ := strconv.Atoi(pid1)
			testenv.WaitFor(t, "the old child to be gone", func() bool { return syscall.Kill(old, 0) != nil })
			if got := d.call("n.pid", `{}`); got != pidN {
				t.Errorf("the neighbouring server was restarted: pid %s -> %s", pidN, got)
			}
			restarts := 0
			for _, ev := range d.followed() {
				if ev.ID <= start {
					continue
				}
				if ev.Kind == wire.EventRestart {
					restarts++
				}
				if ev.Server == "n" {
					t.Errorf("an event of the neighbouring server: %+v", ev)
				}
			}
			if restarts != 1 {
				t.Errorf("%d restart events; want exactly 1:\n%s", restarts, d.events.String())
			}
		})
	}
}

// TestEventsResumeWithLastEventID: a client that reconnects with the id of
// the last event it saw gets every later event still kept, and nothing it
// had already; `mcpx events` without --follow prints the kept ones and
// exits.
func TestEventsResumeWithLastEventID(t *testing.T) {
	d := startWatchDaemon(t, "off")
	bc := client.New(d.sock, client.Options{})
	d.call("w.pid", `{}`)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()

	// A following client that reads two events and goes away.
	var seen []uint64
	errStop := fmt.Errorf("enough")
	err := bc.Events(ctx, 0, true, func(ev wire.LifecycleEvent, _ json.RawMessage) error {
		seen = append(seen, ev.ID)
		if len(seen) == 2 {
			return errStop
		}
		return nil
	})
	if err != errStop {
		t.Fatalf("following: %v", err)
	}
	// Meanwhile: more events (the neighbour starts, w is stopped).
	d.call("n.pid", `{}`)
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"stop", "--broker", d.sock, "w-1"}, strings.NewReader(""), &out, &errOut); code != exitOK {
		t.Fatalf("mcpx stop w-1: exit %d: %s", code, errOut.String())
	}
	d.waitEvent(0, "w-1's exit", func(ev wire.LifecycleEvent) bool { return ev.Kind == wire.EventExit && ev.Instance == "w-1" })

	var all, resumed []uint64
	collect := func(into *[]uint64) func(wire.LifecycleEvent, json.RawMessage) error {
		return func(ev wire.LifecycleEvent, _ json.RawMessage) error {
			if ev.Kind == wire.EventGap {
				t.Errorf("a gap with nothing lost: %+v", ev)
			}
			*into = append(*into, ev.ID)
			return nil
		}
	}
	if err := bc.Events(ctx, 0, false, collect(&all)); err != nil {
		t.Fatal(err)
	}
	if err := bc.Events(ctx, seen[1], false, collect(&resumed)); err != nil {
		t.Fatal(err)
	}
	if len(all) < 5 || all[0] != seen[0] || all[1] != seen[1] {
		t.Fatalf("kept events %v; the follower saw %v first", all, seen)
	}
	if fmt.Sprint(resumed) != fmt.Sprint(all[2:]) {
		t.Errorf("resuming after %d got %v; want every later kept event %v", seen[1], resumed, all[2:])
	}

	// mcpx events: the kept events, one line each, then it exits.
	out.Reset()
	if code := run(t.Context(), []string{"events", "--broker", d.sock}, strings.NewReader(""), &out, &errOut); code != exitOK {
		t.Fatalf("mcpx events: exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(all) || !strings.Contains(out.String(), " exit w global w-1 pid ") || !strings.Contains(out.String(), ": stopped by request") {
		t.Errorf("mcpx events printed %d lines for %d events:\n%s", len(lines), len(all), out.String())
	}
}
