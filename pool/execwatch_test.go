package pool_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/pool"
)

// execScript is a #! script that runs this test binary as the demo server:
// byte-identical wherever it is written.
func execScript() string { return fmt.Sprintf("#!/bin/sh\nexec %q \"$@\"\n", os.Args[0]) }

// relink makes link point at target, replacing it at once (rename), as
// `ln -sfn` and package managers do.
func relink(t *testing.T, target, link string) {
	t.Helper()
	tmp := link + ".new"
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
}

// scriptDirs writes the script as a/srv, a/srv2 and b/srv under a new
// directory and links bin/srv to a/srv; it returns the directory and the link.
func scriptDirs(t *testing.T) (dir, link string) {
	t.Helper()
	dir = realDir(t)
	testenv.Mkdir(t, filepath.Join(dir, "a"))
	testenv.Mkdir(t, filepath.Join(dir, "b"))
	for _, p := range []string{"a/srv", "a/srv2", "b/srv"} {
		testenv.WriteFile(t, filepath.Join(dir, p), execScript())
		if err := os.Chmod(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Mkdir(t, filepath.Join(dir, "bin"))
	link = filepath.Join(dir, "bin", "srv")
	relink(t, filepath.Join(dir, "a", "srv"), link)
	return dir, link
}

// waitEvents waits (bounded) until the log has an event after id that
// matches ok, and returns every event after id up to it.
func waitEvents(t *testing.T, log *pool.EventLog, after uint64, what string, ok func(pool.Event) bool) []pool.Event {
	t.Helper()
	deadline := time.After(20 * time.Second)
	var seen []pool.Event
	for {
		evs, _, more := log.Since(after)
		for _, ev := range evs {
			seen = append(seen, ev)
			after = ev.ID
			if ok(ev) {
				return seen
			}
		}
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("no %s event within 20s; saw %+v", what, seen)
		}
	}
}

func count(evs []pool.Event, kind pool.EventKind) int {
	n := 0
	for _, ev := range evs {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}

func TestExecWatchReplacesAChangedExecutable(t *testing.T) {
	dir, link := scriptDirs(t)
	s := demoServer(t, "demo")
	s.Command = link
	other := demoServer(t, "other")
	var logBuf syncBuffer
	p := newPool(t, pool.Options{ExecWatch: -1, Logger: slog.New(slog.NewTextHandler(&logBuf, nil))}, s, other)
	tg := pool.Target{Server: "demo", Key: "global"}
	to := pool.Target{Server: "other", Key: "global"}
	pid1 := mustCall(t, p, tg, "pid", nil)
	otherPid := mustCall(t, p, to, "pid", nil)
	st := p.Instances()[0]
	if !strings.HasPrefix(st.Exec, "sha256:") {
		t.Fatalf("status shows exec %q; want sha256:<16 hex>", st.Exec)
	}

	// The same script in the same directory: the same program.
	relink(t, filepath.Join(dir, "a", "srv2"), link)
	if n := p.CheckExec(); n != 0 {
		t.Fatalf("re-pointing at an identical script in the same directory replaced %d instances", n)
	}
	if got := mustCall(t, p, tg, "pid", nil); got != pid1 {
		t.Fatalf("the child changed (%s -> %s) though its program did not", pid1, got)
	}

	// A slow call in flight, then the same bytes in another directory.
	mark := p.Events().Add(pool.Event{Kind: "test-mark"}).ID
	slow := make(chan error, 1)
	go func() {
		got, err := call(context.Background(), p, tg, "sleep", map[string]any{"ms": 1500})
		if err == nil && got != "slept 1500ms" {
			err = fmt.Errorf("sleep answered %q", got)
		}
		slow <- err
	}()
	testenv.WaitFor(t, "the slow call to be in flight", func() bool { return p.Instances()[0].InFlight == 1 })
	relink(t, filepath.Join(dir, "b", "srv"), link)
	if n := p.CheckExec(); n != 1 {
		t.Fatalf("re-pointing at an identical script in another directory replaced %d instances; want 1", n)
	}
	if err := <-slow; err != nil {
		t.Errorf("the call in flight during the replacement failed: %v", err)
	}
	evs := waitEvents(t, p.Events(), mark, "ready", func(ev pool.Event) bool { return ev.Kind == pool.EventReady && ev.Server == "demo" })
	evs = append(evs, waitEvents(t, p.Events(), evs[len(evs)-1].ID, "exit of the old child", func(ev pool.Event) bool {
		return ev.Kind == pool.EventExit && ev.Pid == atoi(t, pid1)
	})...)
	if n := count(evs, pool.EventRestart); n != 1 {
		t.Errorf("%d restart events; want exactly 1: %+v", n, evs)
	}
	for _, ev := range evs {
		if ev.Kind == pool.EventRestart && (ev.Reason != "executable changed: location changed" || ev.Path != link || ev.Pid != atoi(t, pid1)) {
			t.Errorf("restart event %+v; want reason \"executable changed: location changed\", path %s, pid %s", ev, link, pid1)
		}
		if ev.Server == "other" {
			t.Errorf("the neighbouring server had an event: %+v", ev)
		}
	}
	pid2 := mustCall(t, p, tg, "pid", nil)
	if pid2 == pid1 {
		t.Fatalf("still pid %s after the replacement", pid1)
	}
	if alive(atoi(t, pid1)) {
		t.Errorf("the old child %s is still alive", pid1)
	}
	if got := mustCall(t, p, to, "pid", nil); got != otherPid {
		t.Errorf("the neighbouring instance changed: %s -> %s", otherPid, got)
	}
	// Nothing changed since: no second replacement.
	if n := p.CheckExec(); n != 0 {
		t.Errorf("a second check replaced %d instances", n)
	}

	// A missing executable: the child keeps running, one warning.
	os.Remove(link)
	for range 3 {
		if n := p.CheckExec(); n != 0 {
			t.Fatalf("a missing executable replaced %d instances", n)
		}
	}
	if got := mustCall(t, p, tg, "pid", nil); got != pid2 {
		t.Errorf("the child changed when its executable went missing: %s -> %s", pid2, got)
	}
	if n := strings.Count(logBuf.String(), "executable is gone"); n != 1 {
		t.Errorf("%d warnings about the missing executable; want 1:\n%s", n, logBuf.String())
	}
}

func TestExecWatchTickSparesCallKeys(t *testing.T) {
	dir, link := scriptDirs(t)
	s := demoServer(t, "demo")
	s.Command = link
	p := newPool(t, pool.Options{ExecWatch: 20 * time.Millisecond}, s)
	tg := pool.Target{Server: "demo", Key: "global"}
	tc := pool.Target{Server: "demo", Key: "call:1", Ephemeral: true}
	pid1 := mustCall(t, p, tg, "pid", nil)
	mark := p.Events().Add(pool.Event{Kind: "test-mark"}).ID
	slow := make(chan error, 1)
	go func() {
		_, err := call(context.Background(), p, tc, "sleep", map[string]any{"ms": 1000})
		slow <- err
	}()
	testenv.WaitFor(t, "the call: instance to be busy", func() bool {
		for _, in := range p.Instances() {
			if in.Key == tc.Key && in.InFlight == 1 {
				return true
			}
		}
		return false
	})
	relink(t, filepath.Join(dir, "b", "srv"), link)
	evs := waitEvents(t, p.Events(), mark, "ready of the replacement", func(ev pool.Event) bool { return ev.Kind == pool.EventReady && ev.Key == "global" })
	if err := <-slow; err != nil {
		t.Errorf("the call: instance's call failed: %v", err)
	}
	evs = append(evs, waitEvents(t, p.Events(), evs[len(evs)-1].ID, "exit of the call: child", func(ev pool.Event) bool {
		return ev.Kind == pool.EventExit && ev.Key == tc.Key
	})...)
	if count(evs, pool.EventRestart) != 1 {
		t.Errorf("want one restart (of the global instance, not the call: one): %+v", evs)
	}
	for _, ev := range evs {
		if ev.Kind == pool.EventRestart && ev.Key != "global" {
			t.Errorf("a call: instance was replaced: %+v", ev)
		}
	}
	if got := mustCall(t, p, tg, "pid", nil); got == pid1 {
		t.Errorf("the tick did not replace the child (still %s)", pid1)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("pid %q: %v", s, err)
	}
	return n
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestExecWatchSaysBytesChanged: an executable rewritten where it is
// restarts its child with the reason "bytes changed" (the location's is
// TestExecWatchReplacesAChangedExecutable's, the program file's
// TestExecWatchFollowsAnInterpretersProgram's).
func TestExecWatchSaysBytesChanged(t *testing.T) {
	dir := realDir(t)
	exe := filepath.Join(dir, "srv")
	testenv.WriteFile(t, exe, execScript())
	if err := os.Chmod(exe, 0o755); err != nil {
		t.Fatal(err)
	}
	s := demoServer(t, "demo")
	s.Command = exe
	p := newPool(t, pool.Options{ExecWatch: -1}, s)
	tg := pool.Target{Server: "demo", Key: "global"}
	pid1 := mustCall(t, p, tg, "pid", nil)
	mark := p.Events().Add(pool.Event{Kind: "test-mark"}).ID
	testenv.WriteFile(t, exe, execScript()+"# a new version\n")
	if n := p.CheckExec(); n != 1 {
		t.Fatalf("a rewritten executable replaced %d instances; want 1", n)
	}
	evs := waitEvents(t, p.Events(), mark, "exit of the old child", func(ev pool.Event) bool {
		return ev.Kind == pool.EventExit && ev.Pid == atoi(t, pid1)
	})
	if n := count(evs, pool.EventRestart); n != 1 {
		t.Errorf("%d restart events; want 1: %+v", n, evs)
	}
	for _, ev := range evs {
		if ev.Kind == pool.EventRestart && (ev.Reason != "executable changed: bytes changed" || ev.Path != exe) {
			t.Errorf("restart event %+v; want reason \"executable changed: bytes changed\", path %s", ev, exe)
		}
	}
}

// TestExecWatchFollowsAnInterpretersProgram (real-use 12): a server run as
// `sh script` is replaced when the script changes, not only when sh does;
// the restart names the script.
func TestExecWatchFollowsAnInterpretersProgram(t *testing.T) {
	dir := realDir(t)
	script := filepath.Join(dir, "server.sh")
	testenv.WriteFile(t, script, execScript())
	s := demoServer(t, "demo")
	s.Command, s.Args = "/bin/sh", []string{script}
	p := newPool(t, pool.Options{ExecWatch: -1}, s)
	tg := pool.Target{Server: "demo", Key: "global"}
	pid1 := mustCall(t, p, tg, "pid", nil)
	if n := p.CheckExec(); n != 0 {
		t.Fatalf("an unchanged script replaced %d instances", n)
	}
	mark := p.Events().Add(pool.Event{Kind: "test-mark"}).ID
	testenv.WriteFile(t, script, execScript()+"# a new version\n")
	if n := p.CheckExec(); n != 1 {
		t.Fatalf("a changed script replaced %d instances; want 1", n)
	}
	evs := waitEvents(t, p.Events(), mark, "exit of the old child", func(ev pool.Event) bool {
		return ev.Kind == pool.EventExit && ev.Pid == atoi(t, pid1)
	})
	for _, ev := range evs {
		if ev.Kind == pool.EventRestart && (ev.Reason != "executable changed: program file changed" || ev.Path != script) {
			t.Errorf("restart event %+v; want reason \"executable changed: program file changed\", path %s", ev, script)
		}
	}
	if n := count(evs, pool.EventRestart); n != 1 {
		t.Errorf("%d restart events; want 1: %+v", n, evs)
	}
	if pid2 := mustCall(t, p, tg, "pid", nil); pid2 == pid1 {
		t.Fatalf("still pid %s after the script changed", pid1)
	}
	// The script gone: the child keeps running.
	os.Remove(script)
	if n := p.CheckExec(); n != 0 {
		t.Errorf("a removed script replaced %d instances", n)
	}
}
