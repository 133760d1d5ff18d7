package pool_test

import (
	"errors"
	"testing"

	"mcpx.dev/mcpx/pool"
)

// TestCrashAfterAGoodCallRestartsAtOnce: a child that served a call and then
// crashed is restarted by the next call, however often that happens; only
// crashes with no good call between them (TestCrashLoopBackoff) back off.
func TestCrashAfterAGoodCallRestartsAtOnce(t *testing.T) {
	p := newPool(t, pool.Options{}, demoServer(t, "demo"))
	tg := pool.Target{Server: "demo", Key: "global"}
	for i := range 6 {
		if _, err := call(t.Context(), p, tg, "echo", map[string]string{"message": "hi"}); err != nil {
			t.Fatalf("round %d: echo: %v", i, err)
		}
		if _, err := call(t.Context(), p, tg, "crash", map[string]any{"code": 3}); !errors.Is(err, pool.ErrCrashed) {
			t.Fatalf("round %d: crash: err = %v, want ErrCrashed", i, err)
		}
		if st := p.Instances(); len(st) != 1 || st[0].State == pool.StateBackoff {
			t.Fatalf("round %d: status %+v, want no backoff", i, st)
		}
	}
}
