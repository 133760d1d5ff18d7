package broker_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
)

// TestToolListAfterRestartStartsNoChild: a restarted broker on the same
// state directory lists a worktree server's tools (what `mcpx tools`,
// `mcpx types` and the OpenAPI documents read), prompts and resources
// from the schema cache, and starts no child until a call.
func TestToolListAfterRestartStartsNoChild(t *testing.T) {
	state := t.TempDir()
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	setup := demoSetup{scopes: map[string]config.ScopeKind{"demo": config.ScopeWorktree}, opts: broker.Options{StateDir: state}}
	b1 := startDemoBroker(t, setup)
	first, err := b1.ToolList(t.Context(), req("demo", repo))
	if err != nil || !strings.Contains(string(first.Tools), `"echo"`) {
		t.Fatalf("ToolList = %.100s, %v", first.Tools, err)
	}
	prompts, err := b1.Prompts(t.Context(), req("demo", repo))
	if err != nil || !strings.Contains(string(prompts), `"name"`) {
		t.Fatalf("Prompts = %.100s, %v", prompts, err)
	}
	resources, err := b1.Resources(t.Context(), req("demo", repo))
	if err != nil || !strings.Contains(string(resources), `"uri"`) {
		t.Fatalf("Resources = %.100s, %v", resources, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	b1.Close(ctx)
	cancel()

	b2 := startDemoBroker(t, setup)
	l, err := b2.ToolList(t.Context(), req("demo", repo))
	if err != nil || string(l.Tools) != string(first.Tools) || l.Instructions != first.Instructions || l.Instructions == "" {
		t.Fatalf("ToolList after restart = %.100s, %q, %v; want the first listing", l.Tools, l.Instructions, err)
	}
	// Prompts and resources likewise.
	if got, err := b2.Prompts(t.Context(), req("demo", repo)); err != nil || string(got) != string(prompts) {
		t.Errorf("Prompts after restart = %.100s, %v; want the first listing", got, err)
	}
	if got, err := b2.Resources(t.Context(), req("demo", repo)); err != nil || string(got) != string(resources) {
		t.Errorf("Resources after restart = %.100s, %v; want the first listing", got, err)
	}
	if st := b2.Stats(); st.Spawns != 0 {
		t.Fatalf("the listings started a child: %+v", st)
	}
	if got := callText(t, b2, req("demo", repo), "echo", `{"message":"hi"}`); got != "hi" {
		t.Errorf("echo = %q", got)
	}
	if st := b2.Stats(); st.Spawns != 1 {
		t.Errorf("the call started %d children, want 1", st.Spawns)
	}
}
