package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/observe/webhook"
)

// deliveries is a webhook receiver's record: how often each delivery id
// arrived, and the kinds in order.
type deliveries struct {
	mu    sync.Mutex
	count map[string]int
	kinds []string
}

func (r *deliveries) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	io.Copy(io.Discard, req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count[req.Header.Get(webhook.HeaderDelivery)]++
	r.kinds = append(r.kinds, req.Header.Get(webhook.HeaderEvent))
}

// has reports whether n deliveries of kind arrived.
func (r *deliveries) has(kind string, n int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range r.kinds {
		if k == kind {
			n--
		}
	}
	return n <= 0
}

// TestUpgradeWebhooksOnceProcess: a real `mcpx serve` with a webhook,
// upgraded in place twice, then killed and started again on the same state
// directory, delivers each delivery id once: an upgrade's next image goes
// on after the last event the one before fed its webhooks (it does not
// send the events handed over again), and a new daemon's ids, whose events
// are numbered from 1 again, are not an old one's.
func TestUpgradeWebhooksOnceProcess(t *testing.T) {
	t.Parallel() // a process test (plain_test.go)
	mcpx, dir, marker := processTest(t)
	rec := &deliveries{count: map[string]int{}}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	cfg, _ := json.Marshal(map[string]any{
		"servers": map[string]any{"demo": map[string]any{"command": mcpx, "args": []string{"demo-server"}, "scope": "call",
			"env": map[string]string{proctest.MarkerEnv: proctest.Marker(t)}}},
		"webhooks": []map[string]any{{"url": srv.URL, "secret": "k3y"}},
	})
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), marker, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_STATE_HOME="+filepath.Join(dir, "xstate"))
	d := startUpgradeDaemon(t, mcpx, dir, cfgPath, env)
	call := func(d *upgradeDaemon) {
		t.Helper()
		if _, err := callText(t.Context(), d.bc, client.Caller{Cwd: dir}, "demo", "echo", `{"message":"hi"}`); err != nil {
			t.Fatalf("call: %v\n%s", err, d.logs.String())
		}
	}
	call(d) // a call-scoped child: spawn, ready, exit
	testenv.WaitFor(t, "the first call's exit delivered", func() bool { return rec.has("exit", 1) })
	for n, gen := range []string{"generation 2", "generation 3"} {
		if out, err := d.cli("daemon", "upgrade", "--broker", d.sock); err != nil || !strings.Contains(out, gen) {
			t.Fatalf("upgrade: %v: %s\n%s", err, out, d.logs.String())
		}
		call(d)
		testenv.WaitFor(t, "the call after the upgrade delivered", func() bool { return rec.has("upgrade", n+1) && rec.has("exit", n+2) })
	}
	// A crash: the next daemon begins its event ids at 1 again.
	d.cmd.Process.Kill()
	d.cmd.Wait()
	d = startUpgradeDaemon(t, mcpx, dir, cfgPath, env)
	call(d)
	testenv.WaitFor(t, "the call after the restart delivered", func() bool { return rec.has("exit", 4) })
	if out, err := d.cli("daemon", "stop", "--broker", d.sock); err != nil {
		t.Errorf("daemon stop: %v: %s", err, out)
	}
	d.waitExit()

	rec.mu.Lock()
	defer rec.mu.Unlock()
	for id, n := range rec.count {
		if n != 1 {
			t.Errorf("delivery %q arrived %d times, want once", id, n)
		}
	}
	if spawns := strings.Count(strings.Join(rec.kinds, " "), "spawn"); spawns != 4 {
		t.Errorf("%d spawns delivered, want 4 (one a call): %v", spawns, rec.kinds)
	}
}
