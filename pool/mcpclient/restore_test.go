package mcpclient

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/proctest"
)

// handedTransport is one process's view of a child's pipes that outlive
// it: the lines of the child's stdout arrive on lines, shared by the
// sessions that take turns; Close ends this view only.
type handedTransport struct {
	lines <-chan []byte
	w     io.Writer
	wmu   *sync.Mutex
	done  chan struct{}
	once  sync.Once
	sent  []string // guarded by wmu
}

func (t *handedTransport) Send(_ context.Context, msg []byte) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.sent = append(t.sent, string(msg))
	_, err := t.w.Write(append(msg, '\n'))
	return err
}

func (t *handedTransport) Recv() ([]byte, error) {
	select {
	case l := <-t.lines:
		return l, nil
	case <-t.done:
		return nil, io.EOF
	}
}

func (t *handedTransport) Close() error { t.once.Do(func() { close(t.done) }); return nil }

// TestRestoreGoesOnWithTheChild: a session restored from a snapshot over
// the same child's pipes sends no initialize, goes on from the last id,
// and finds the child as it was (its counter counts on).
func TestRestoreGoesOnWithTheChild(t *testing.T) {
	proctest.CheckNoLeaks(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), demo.EnvServer+"=1", "GORACE=atexit_sleep_ms=0")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	lines := make(chan []byte)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	var wmu sync.Mutex
	view := func() *handedTransport {
		return &handedTransport{lines: lines, w: stdin, wmu: &wmu, done: make(chan struct{})}
	}
	count := func(s *Session) string {
		t.Helper()
		res, err := s.CallTool(t.Context(), "counter", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return toolText(t, res)
	}

	first, err := Connect(t.Context(), view(), Options{Root: t.TempDir(), Era: EraHandshake})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := count(first), count(first); a != "1" || b != "2" {
		t.Fatalf("counted %s, %s", a, b)
	}
	snap := first.Snapshot()
	first.Close()
	b, err := json.Marshal(snap) // it goes through the handoff state file
	if err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}

	tr := view()
	second, err := Restore(tr, Options{Root: t.TempDir()}, back)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if got := count(second); got != "3" {
		t.Errorf("the restored session counted %s, want 3: the child's state is gone", got)
	}
	if second.ProtocolVersion() != first.ProtocolVersion() || string(second.InitializeResult()) != string(first.InitializeResult()) {
		t.Errorf("restored %s %s, want %s %s", second.ProtocolVersion(), second.InitializeResult(), first.ProtocolVersion(), first.InitializeResult())
	}
	wmu.Lock()
	sent := tr.sent
	wmu.Unlock()
	if len(sent) != 1 || strings.Contains(sent[0], `"initialize"`) || !strings.Contains(sent[0], `"id":`+jsonInt(back.NextID+1)+`,`) {
		t.Errorf("the restored session sent %q; want one tools/call with id %d, no initialize", sent, back.NextID+1)
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }
