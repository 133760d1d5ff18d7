package broker_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// A child that stops answering (SIGSTOP) is found wedged when the server's
// callTimeout fires: the timed-out call is a 504, a ping then gets no
// answer, the child is killed, and a later call runs on a new child. The
// callTimeout is the broker's own deadline inside pool.Do, not the
// caller's, so this goes through the broker.
func TestWedgedChildReplacedAfterCallTimeout(t *testing.T) {
	b := startDemoBroker(t, demoSetup{
		scopes: map[string]config.ScopeKind{"demo": config.ScopeGlobal},
		// Long enough that a call to the running child ends within it on a
		// loaded machine (500 ms did not: a shared CI machine is no quiet
		// one); the stopped child's calls time out at it either way.
		server: func(s *config.Server) { s.CallTimeout = config.Duration(3 * time.Second) },
	})
	r := req("demo", "")
	pid, _ := strconv.Atoi(callText(t, b, r, "pid", `{}`))
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	testenv.WaitFor(t, "the child stopped", func() bool { return proctest.Stopped(pid) })

	// The probe runs in the background after the first timeout; each
	// further call either times out too or lands on the new child. A
	// bounded number of calls, not a time, ends the loop.
	var replaced int
	for i := range 40 {
		res, err := b.CallTool(t.Context(), r, "pid", json.RawMessage(`{}`), nil)
		if err == nil {
			replaced, _ = strconv.Atoi(text(t, res))
			break
		}
		var be *broker.Error
		if !errors.As(err, &be) || (be.Kind != broker.KindTimeout && be.Kind != broker.KindChildFailed && be.Kind != broker.KindUnavailable) {
			t.Fatalf("call %d to the stopped child: %v, want a timeout (or the wedge's failure)", i, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if replaced == 0 || replaced == pid {
		t.Fatalf("after the callTimeouts the call ran on pid %d, want a new child (old %d); instances %+v", replaced, pid, b.Instances())
	}
	if s := b.Stats(); s.Wedged != 1 {
		t.Errorf("stats = %+v, want 1 wedged", s)
	}
	testenv.WaitFor(t, "the wedged child gone", func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
		return err != nil
	})
}
