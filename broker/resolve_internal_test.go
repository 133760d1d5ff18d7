package broker

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
)

// TestListingsResolveOnce: a listing resolves its request once — one call
// id minted (and with it one cwd stat, one lease check, one session note)
// — whether the child or, after a restart, the schema cache answers it. ToolList, Resources
// and Prompts used to resolve the target for the cache and again for the
// child.
func TestListingsResolveOnce(t *testing.T) {
	proctest.CheckNoLeaks(t)
	js, _ := json.Marshal(map[string]any{"servers": map[string]any{"demo": map[string]any{
		"command": os.Args[0], "scope": "worktree",
		"env": map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(t)},
	}}})
	cfg, err := config.Parse(js, "test.json")
	if err != nil {
		t.Fatal(err)
	}
	state, repo := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := Request{Caller: Caller{Name: "local:test", Via: "unix", Local: true, Owner: true, Rights: rights.All()},
		Server: "demo", Context: CallContext{Cwd: repo}}
	check := func(b *Broker, round string) {
		t.Helper()
		for _, l := range []struct {
			name string
			list func() error
		}{
			{"tools", func() error { _, err := b.ToolList(t.Context(), r); return err }},
			{"resources", func() error { _, err := b.Resources(t.Context(), r); return err }},
			{"prompts", func() error { _, err := b.Prompts(t.Context(), r); return err }},
		} {
			before := callIDSeq.Load()
			if err := l.list(); err != nil {
				t.Fatalf("%s %s: %v", l.name, round, err)
			}
			if n := callIDSeq.Load() - before; n != 1 {
				t.Errorf("%s %s: resolved %d times, want once", l.name, round, n)
			}
		}
	}
	for _, round := range []string{"from the child", "from the schema cache, after a restart"} {
		b, err := New(Options{Config: cfg, ReapInterval: -1, StateDir: state})
		if err != nil {
			t.Fatal(err)
		}
		check(b, round)
		if st := b.Stats(); round != "from the child" && st.Spawns != 0 {
			t.Errorf("%s: %d children started, want the cache to answer", round, st.Spawns)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		b.Close(ctx)
		cancel()
	}
}
