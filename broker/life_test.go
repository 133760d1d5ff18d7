package broker_test

import (
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/broker/config"
	"mcpx.dev/mcpx/internal/proctest"
	"mcpx.dev/mcpx/internal/testenv"
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
