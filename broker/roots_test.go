package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// server-filesystem configured with no directory arguments asks roots/list
// after notifications/initialized and applies the answer asynchronously,
// then says so on stderr, which its "ready" names. The first call through
// the broker, from each of 20 fresh worktrees, already sees that worktree
// as its one allowed directory, however loaded the machine.
func TestFilesystemFirstCallSeesRoot(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	names := make([]string, 20)
	for i := range names {
		names[i] = fmt.Sprintf("wt%02d", i)
	}
	paths := testenv.Worktrees(t, filepath.Join(t.TempDir(), "repo"), nil, names...)[1:]
	b := newRealBroker(t, map[string]map[string]any{"fs": {
		"command": testenv.Node(t),
		"args":    []string{testenv.NPMPackageBin(t, filesystemPkg)},
		"scope":   "worktree",
		"max":     len(paths),
		"ready":   map[string]any{"stderr": "^Updated allowed directories from MCP roots"},
	}}, map[string]any{"limits": map[string]any{
		// A loaded machine (CI runs packages side by side) may take more
		// than the default to start node and hear its request; the first
		// spawn must not learn "never asks" from a slow start.
		"rootsWait": "10s",
	}})
	var total time.Duration
	for _, wt := range paths {
		start := time.Now()
		res := call(t, ctx, b, request("fs", wt), "list_allowed_directories", map[string]any{})
		total += time.Since(start)
		if want := "Allowed directories:\n" + wt; res.text() != want {
			t.Errorf("first call from %s: %q, want %q", wt, res.text(), want)
		}
	}
	t.Logf("first call (spawn + initialize + call) from %d fresh worktrees: %v on average", len(paths), total/time.Duration(len(paths)))
}

// BenchmarkFirstCall measures a first call from a fresh directory: spawn,
// initialize (and the start-up roots wait), one call. Each iteration is a
// new cwd-scoped instance; max 1 evicts the previous one.
func BenchmarkFirstCall(b *testing.B) {
	servers := map[string]func(testing.TB) (map[string]any, string){
		"filesystem": func(tb testing.TB) (map[string]any, string) {
			return map[string]any{"command": testenv.Node(tb), "args": []string{testenv.NPMPackageBin(tb, filesystemPkg)}}, "list_allowed_directories"
		},
		"demo": func(tb testing.TB) (map[string]any, string) {
			return map[string]any{"command": os.Args[0], "env": map[string]string{demo.EnvServer: "1"}}, "echo"
		},
	}
	for _, name := range []string{"demo", "filesystem"} {
		b.Run(name, func(b *testing.B) {
			proctest.CheckNoLeaks(b)
			def, tool := servers[name](b)
			def["scope"], def["max"] = "cwd", 1
			br := newBenchRealBroker(b, map[string]map[string]any{name: def})
			base := b.TempDir()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				dir := filepath.Join(base, fmt.Sprint(i))
				if err := os.Mkdir(dir, 0o755); err != nil {
					b.Fatal(err)
				}
				r := broker.Request{Caller: localCaller, Server: name, Context: broker.CallContext{Cwd: dir}}
				if _, err := callErr(b.Context(), br, r, tool, map[string]any{"message": "x"}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// newBenchRealBroker is newRealBroker for benchmarks.
func newBenchRealBroker(tb testing.TB, servers map[string]map[string]any) *broker.Broker {
	tb.Helper()
	data, err := json.Marshal(map[string]any{"servers": servers})
	if err != nil {
		tb.Fatal(err)
	}
	cfg, err := config.Parse(data, "bench.json")
	if err != nil {
		tb.Fatalf("config: %v\n%s", err, data)
	}
	b, err := broker.New(broker.Options{Config: cfg, ReapInterval: -1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		b.Close(ctx)
	})
	return b
}

// TestWholeDiskRootIsNoted (real-use 3): a caller whose cwd is / or the
// home directory would hand a server offered roots the whole disk: the
// target carries a degraded note saying so, unless the server takes no
// roots.
func TestWholeDiskRootIsNoted(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"servers": {"fs": {"command": "/bin/true", "scope": "cwd"},
		"off": {"command": "/bin/true", "scope": "cwd", "roots": false}}}`), "test.json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(broker.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(context.Background()) })
	home, _ := os.UserHomeDir()
	for _, cwd := range []string{"/", home} {
		tg, err := b.Target(broker.Request{Server: "fs", Caller: broker.Caller{Name: "t", Local: true, Owner: true, Rights: rights.All()}, Context: broker.CallContext{Cwd: cwd}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(tg.Degraded, "sees every file below it") {
			t.Errorf("fs from %s: degraded %q, want the whole-disk note", cwd, tg.Degraded)
		}
		tg, _ = b.Target(broker.Request{Server: "off", Caller: broker.Caller{Name: "t", Local: true, Owner: true, Rights: rights.All()}, Context: broker.CallContext{Cwd: cwd}})
		if strings.Contains(tg.Degraded, "sees every file") {
			t.Errorf("off (roots false) from %s: degraded %q", cwd, tg.Degraded)
		}
	}
}
