package broker_test

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestSessionRecordAndHistory: a session keeps its creator's pid, user,
// cwd, parent session and client, and who attached to it (each process
// once) and how each detached: pid-gone when its process exits, killed
// when the session is stopped, idle when its instances idle out.
func TestSessionRecordAndHistory(t *testing.T) {
	t.Parallel()
	b := startDemoBroker(t, demoSetup{scopes: map[string]config.ScopeKind{"demo": config.ScopeSession},
		opts: broker.Options{ReapInterval: 100 * time.Millisecond}})
	me := local
	me.Uid = os.Getuid()
	sleeper := func() *exec.Cmd {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	a, bproc := sleeper(), sleeper()
	dirA, dirB := t.TempDir(), t.TempDir()
	call := func(pid int, cwd string) {
		t.Helper()
		r := broker.Request{Caller: me, Server: "demo", Context: broker.CallContext{Cwd: cwd, Session: "work", ParentSession: "agent-1", Pid: pid, Client: "mcpx/test"}}
		callText(t, b, r, "pid", `{}`)
	}
	call(a.Process.Pid, dirA)
	call(bproc.Process.Pid, dirB)
	call(a.Process.Pid, dirA) // attached already: no new entry
	s, err := b.Session(me, "session:work")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := user.Current()
	cr := s.Creator
	if cr.Pid != a.Process.Pid || cr.Cwd != dirA || cr.ParentSession != "agent-1" || cr.Client != "mcpx/test" || cr.User != u.Username || cr.Host == "" {
		t.Errorf("creator = %+v, want pid %d, cwd %s, parent agent-1, client mcpx/test, user %s and a host", cr, a.Process.Pid, dirA, u.Username)
	}
	if len(s.History) != 2 || s.History[0].Pid != a.Process.Pid || s.History[1].Pid != bproc.Process.Pid || s.History[1].Cwd != dirB || !s.History[0].Ended.IsZero() {
		t.Fatalf("history = %+v, want A then B, both attached", s.History)
	}

	a.Process.Kill()
	a.Wait()
	s, _ = b.Session(me, "session:work")
	if h := s.History; h[0].End != broker.DetachPidGone || h[0].Ended.IsZero() || h[1].End != "" {
		t.Errorf("after A exits: history = %+v, want A pid-gone, B attached", h)
	}

	if err := b.StopSession(t.Context(), me, "session:work"); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the session's instances to stop", func() bool { return len(b.Instances()) == 0 })
	call(bproc.Process.Pid, dirB) // B again: a new attachment
	s, _ = b.Session(me, "session:work")
	if h := s.History; len(h) != 3 || h[1].End != broker.DetachKilled || h[2].Pid != bproc.Process.Pid || h[2].End != "" {
		t.Fatalf("after a stop and a new call: history = %+v, want B killed, then B attached again", h)
	}

	idle := 200 * time.Millisecond
	if _, err := b.SetSession(me, "session:work", broker.SessionSettings{IdleTimeout: &idle}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the session to idle out", func() bool { return len(b.Instances()) == 0 })
	call(bproc.Process.Pid, dirB)
	s, _ = b.Session(me, "session:work")
	if h := s.History; len(h) != 4 || h[2].End != broker.DetachIdle {
		t.Errorf("after idling out: history = %+v, want B's second attachment ended idle", h)
	}
}

// TestSessionHistoryIsBounded: a session keeps its newest 32 attachments
// and counts the ones let go.
func TestSessionHistoryIsBounded(t *testing.T) {
	t.Parallel()
	b := startDemoBroker(t, demoSetup{scopes: map[string]config.ScopeKind{"demo": config.ScopeSession}})
	dir := t.TempDir()
	for i := range 40 {
		cwd := filepath.Join(dir, strconv.Itoa(i))
		os.Mkdir(cwd, 0o755)
		r := broker.Request{Caller: remote("bob"), Server: "demo", Context: broker.CallContext{Cwd: cwd, Session: "s"}}
		callText(t, b, r, "pid", `{}`)
	}
	ss := b.Sessions(remote("bob"))
	if len(ss) != 1 || len(ss[0].History) != 32 || ss[0].Dropped != 8 || ss[0].History[31].Cwd != filepath.Join(dir, "39") {
		t.Fatalf("sessions = %+v, want one with the newest 32 attachments and 8 dropped", ss)
	}
}
