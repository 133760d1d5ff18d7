package runner_test

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/scripts/runner"
)

// readyWriter collects what a command writes and closes ready at its
// first "ready".
type readyWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	once  sync.Once
	ready chan struct{}
}

func newReadyWriter() *readyWriter { return &readyWriter{ready: make(chan struct{})} }

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), "ready") {
		w.once.Do(func() { close(w.ready) })
	}
	return len(p), nil
}

// interruptWhenReady is a context that ends once w has seen "ready".
func interruptWhenReady(t *testing.T, w *readyWriter) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	go func() {
		select {
		case <-w.ready:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx
}

// TestRunLeased: `mcpx lease run`'s command gets $MCPX_LEASE and its
// output goes where it is told; its exit code is its own, 128+n for a
// signal; an interrupt is passed on as SIGTERM (not the SIGINT a script
// gets) and waited for; one that does not start is 127 with an OpStart
// error saying why.
func TestRunLeased(t *testing.T) {
	proctest.CheckNoLeaks(t)
	var out, errOut bytes.Buffer
	code, err := runner.RunLeased(t.Context(), "L1", []string{"sh", "-c", `echo "lease=$MCPX_LEASE"; echo oops >&2; exit 3`}, nil, &out, &errOut)
	if code != 3 || err != nil || out.String() != "lease=L1\n" || errOut.String() != "oops\n" {
		t.Errorf("a command that exits 3: %d, %v, stdout %q, stderr %q; want 3, lease=L1 and oops", code, err, out.String(), errOut.String())
	}
	if code, err := runner.RunLeased(t.Context(), "L1", []string{"sh", "-c", `kill -TERM $$`}, nil, nil, nil); code != 128+15 || err != nil {
		t.Errorf("a command killed by SIGTERM: %d, %v; want 143", code, err)
	}

	w := newReadyWriter()
	ctx := interruptWhenReady(t, w)
	code, err = runner.RunLeased(ctx, "L1", []string{"sh", "-c", `trap "exit 5" INT; trap "exit 7" TERM; echo ready; while :; do sleep 0.05; done`}, nil, w, nil)
	if code != 7 || err != nil {
		t.Errorf("an interrupted command: %d, %v; want 7, its exit on SIGTERM", code, err)
	}

	code, err = runner.RunLeased(t.Context(), "L1", []string{"./no-such-command"}, nil, nil, nil)
	var re *runner.Error
	if code != 127 || !errors.As(err, &re) || re.Op != runner.OpStart || err.Error() != "fork/exec ./no-such-command: no such file or directory" {
		t.Errorf("a command that does not start: %d, %v; want 127 and an OpStart error saying why", code, err)
	}
}

// TestScriptInterrupt: an interrupted script gets SIGINT, and one that
// ignores it is killed InterruptGrace later (137).
func TestScriptInterrupt(t *testing.T) {
	proctest.CheckNoLeaks(t)
	w := newReadyWriter()
	cmd := exec.Command("sh", "-c", `trap "exit 5" INT; trap "exit 7" TERM; echo ready; while :; do sleep 0.05; done`)
	cmd.Stdout = w
	if code, err := runner.WaitScript(interruptWhenReady(t, w), cmd); code != 5 || err != nil {
		t.Errorf("an interrupted script: %d, %v; want 5, its exit on SIGINT", code, err)
	}
	w = newReadyWriter()
	cmd = exec.Command("sh", "-c", `trap "" INT; echo ready; exec sleep 60`)
	cmd.Stdout = w
	if code, err := runner.WaitScript(interruptWhenReady(t, w), cmd); code != 128+9 || err != nil {
		t.Errorf("a script that ignores SIGINT: %d, %v; want 137, killed after the grace", code, err)
	}
}

// TestCapped: a Capped keeps the first Max bytes, never fails a write,
// counts what it drops and says so in String; with no Max it keeps all.
func TestCapped(t *testing.T) {
	c := &runner.Capped{Max: 4}
	for _, s := range []string{"hel", "lo", "world"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Errorf("Write(%q) = %d, %v; want all of it taken", s, n, err)
		}
	}
	if string(c.Bytes()) != "hell" || c.Dropped() != 6 || c.String() != "hell\n[mcpx: 6 more bytes dropped: the output is bounded at 4]" {
		t.Errorf("capped at 4: %q, dropped %d, String %q", c.Bytes(), c.Dropped(), c.String())
	}
	var all runner.Capped
	all.Write([]byte("hello "))
	all.Write([]byte("world"))
	if all.String() != "hello world" || all.Dropped() != 0 {
		t.Errorf("uncapped: %q, dropped %d", all.String(), all.Dropped())
	}
}
