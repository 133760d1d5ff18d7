package broker_test

import (
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// readyPid is the pid of server's ready instance; 0 for none.
func readyPid(b *broker.Broker, server string) int {
	for _, in := range b.Instances() {
		if in.Server == server && in.State == "ready" {
			return in.Pid
		}
	}
	return 0
}

// The config's health and min, through the broker, with no caller at all:
// min 1 starts the global server's instance; a SIGSTOPped child is found
// by the health check and replaced; a SIGKILLed one is replaced by min.
func TestHealthAndMinWithNoCaller(t *testing.T) {
	b := startDemoBroker(t, demoSetup{
		scopes: map[string]config.ScopeKind{"demo": config.ScopeGlobal},
		server: func(s *config.Server) {
			s.Min = 1
			s.Health = &config.Health{Interval: config.Period(time.Second), Timeout: config.Duration(300 * time.Millisecond)}
		},
	})
	var pid int
	testenv.WaitFor(t, "min's instance started", func() bool { pid = readyPid(b, "demo"); return pid != 0 })

	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT); syscall.Kill(pid, syscall.SIGKILL) })
	testenv.WaitFor(t, "the child stopped", func() bool { return proctest.Stopped(pid) })
	stopped := time.Now()
	var pid2 int
	testenv.WaitFor(t, "the stopped child replaced", func() bool { pid2 = readyPid(b, "demo"); return pid2 != 0 && pid2 != pid })
	t.Logf("replaced after %.2f health intervals (the bound is 2)", time.Since(stopped).Seconds())
	if s := b.Stats(); s.Wedged != 1 {
		t.Errorf("stats = %+v, want 1 wedged", s)
	}

	if err := syscall.Kill(pid2, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the killed child replaced", func() bool { p := readyPid(b, "demo"); return p != 0 && p != pid2 })
}

// KillAll (a forced stop) cuts a call in flight at once: the long call
// fails, its child is gone, and new calls are refused.
func TestKillAllCutsCallsInFlight(t *testing.T) {
	b := startDemoBroker(t, demoSetup{scopes: map[string]config.ScopeKind{"demo": config.ScopeGlobal}})
	r := req("demo", "")
	pid := callText(t, b, r, "pid", `{}`)
	done := make(chan error, 1)
	go func() {
		_, err := b.CallTool(t.Context(), r, "sleep", []byte(`{"ms": 600000}`), nil)
		done <- err
	}()
	testenv.WaitFor(t, "the long call in flight", func() bool {
		in := b.Instances()
		return len(in) == 1 && in[0].InFlight == 1
	})
	b.KillAll()
	select {
	case err := <-done:
		if err == nil {
			t.Error("the call in flight succeeded after KillAll")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call in flight outlived KillAll")
	}
	if len(b.Instances()) != 0 {
		t.Errorf("instances after KillAll: %+v", b.Instances())
	}
	if _, err := b.CallTool(t.Context(), r, "echo", []byte(`{"message":"x"}`), nil); err == nil {
		t.Error("a call after KillAll succeeded")
	}
	t.Logf("killed pid %s", pid)
}
