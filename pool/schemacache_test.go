package pool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/mcp/jsonrpc"
	"mcpx.dev/mcpx/pool"
)

// methodsLogged returns the methods a demo child logged; none when it
// never started.
func methodsLogged(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// rootsOf calls the demo's roots tool on t.
func rootsOf(t *testing.T, p *pool.Pool, tg pool.Target) string {
	t.Helper()
	var out string
	err := p.Do(t.Context(), tg, func(s *client.Session) error {
		res, err := s.CallTool(t.Context(), "roots", nil, nil)
		if err != nil {
			return err
		}
		var r struct{ Content []struct{ Text string } }
		if err := json.Unmarshal(res, &r); err != nil || len(r.Content) == 0 {
			t.Fatalf("roots result %s: %v", res, err)
		}
		out = r.Content[0].Text
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func protocolOf(p *pool.Pool, server string) string {
	for _, st := range p.Instances() {
		if st.Server == server {
			return st.Protocol
		}
	}
	return ""
}

// TestSchemaCacheAcrossRestart: a child of the stateless era alone and one
// of the handshake era alone work through one pool, roots included; a
// second pool on the same cache file (a restarted daemon) lists their tools
// without starting a child, and initializes the handshake child without a
// probe.
func TestSchemaCacheAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	cacheFile := filepath.Join(dir, "schema-cache.json")
	root := t.TempDir()
	logs := map[string]string{"hs": filepath.Join(dir, "hs.log"), "st": filepath.Join(dir, "st.log")}
	servers := []pool.Server{
		demoServer(t, "hs", demo.EnvEra+"=handshake", demo.EnvRequestLog+"="+logs["hs"]),
		demoServer(t, "st", demo.EnvEra+"=stateless", demo.EnvRequestLog+"="+logs["st"]),
	}
	target := func(server, root string) pool.Target {
		return pool.Target{Server: server, Key: "cwd:" + root, Root: root}
	}
	wantProtocol := map[string]string{"hs": "2025-11-25", "st": jsonrpc.StatelessVersion}

	p1 := pool.New(pool.Options{ReapInterval: -1, SchemaCacheFile: cacheFile})
	p1.SetServers(servers)
	for _, name := range []string{"hs", "st"} {
		if got := rootsOf(t, p1, target(name, root)); !strings.Contains(got, client.FileURI(root)) {
			t.Errorf("%s: roots = %s, want the instance root %s", name, got, root)
		}
		if err := p1.Do(t.Context(), target(name, root), func(s *client.Session) error { _, err := s.Tools(t.Context()); return err }); err != nil {
			t.Fatal(err)
		}
		if got := protocolOf(p1, name); got != wantProtocol[name] {
			t.Errorf("%s: status protocolVersion = %q, want %q", name, got, wantProtocol[name])
		}
	}
	closePool(t, p1)
	if got := methodsLogged(t, logs["hs"]); !slices.Contains(got, "server/discover") {
		t.Fatalf("the first handshake child was not probed: %v", got)
	}
	fi, err := os.Stat(cacheFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cache file: %v, %v; want mode 0600", fi, err)
	}
	for _, l := range logs {
		os.Remove(l)
	}

	// The restarted daemon.
	p2 := newPool(t, pool.Options{SchemaCacheFile: cacheFile}, servers...)
	for _, name := range []string{"hs", "st"} {
		l, ok := p2.ToolListing(t.Context(), target(name, root))
		if !ok || !strings.Contains(string(l.Tools), `"roots"`) || !strings.Contains(l.Instructions, "demo server") || l.Protocol != wantProtocol[name] {
			t.Errorf("%s: ToolListing = %.120s, %q, %q, %v", name, l.Tools, l.Instructions, l.Protocol, ok)
		}
		// Another root is another effective definition.
		if _, ok := p2.ToolListing(t.Context(), target(name, t.TempDir())); ok {
			t.Errorf("%s: ToolListing answered for a root it never saw", name)
		}
	}
	if st := p2.Stats(); st.Spawns != 0 || len(p2.Instances()) != 0 {
		t.Fatalf("listing started children: %+v, %v", st, p2.Instances())
	}
	for name, l := range logs {
		if got := methodsLogged(t, l); len(got) != 0 {
			t.Errorf("%s: a child ran for the listing: %v", name, got)
		}
	}
	// A call starts the child: the handshake one without a probe.
	for _, name := range []string{"hs", "st"} {
		if got := rootsOf(t, p2, target(name, root)); !strings.Contains(got, client.FileURI(root)) {
			t.Errorf("%s after restart: roots = %s", name, got)
		}
		if got := protocolOf(p2, name); got != wantProtocol[name] {
			t.Errorf("%s after restart: protocolVersion = %q", name, got)
		}
	}
	if got := methodsLogged(t, logs["hs"]); len(got) == 0 || got[0] != "initialize" || slices.Contains(got, "server/discover") {
		t.Errorf("the restarted handshake child saw %v; want initialize first and no probe", got)
	}
	// With a live instance, the child answers, not the cache.
	if _, ok := p2.ToolListing(t.Context(), target("hs", root)); ok {
		t.Error("ToolListing answered from the cache for a running instance")
	}
}

func closePool(t *testing.T, p *pool.Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p.Close(ctx)
}

// syncBuf is a log sink safe for concurrent writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuf) Write(p []byte) (int, error) { b.mu.Lock(); defer b.mu.Unlock(); return b.b.Write(p) }
func (b *syncBuf) String() string              { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }

// TestSchemaCacheCorrupt: a corrupt or foreign-version cache file is
// ignored with one log line and rewritten; the pool works.
func TestSchemaCacheCorrupt(t *testing.T) {
	for name, content := range map[string]string{
		"garbage":       "{not json",
		"other version": `{"version":99,"entries":{}}`,
	} {
		t.Run(name, func(t *testing.T) {
			cacheFile := filepath.Join(t.TempDir(), "schema-cache.json")
			if err := os.WriteFile(cacheFile, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			var logs syncBuf
			p := newPool(t, pool.Options{SchemaCacheFile: cacheFile, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, demoServer(t, "demo"))
			if n := strings.Count(logs.String(), "ignoring the schema cache file"); n != 1 {
				t.Errorf("%d log lines about the file, want 1:\n%s", n, logs.String())
			}
			tg := pool.Target{Server: "demo", Key: "global"}
			if _, ok := p.ToolListing(t.Context(), tg); ok {
				t.Error("a listing from a corrupt file")
			}
			if err := p.Do(t.Context(), tg, func(s *client.Session) error { _, err := s.Tools(t.Context()); return err }); err != nil {
				t.Fatal(err)
			}
			closePool(t, p)
			b, err := os.ReadFile(cacheFile)
			var doc struct {
				Version int
				Entries map[string]json.RawMessage
			}
			if err != nil || json.Unmarshal(b, &doc) != nil || doc.Version != 1 || len(doc.Entries) != 1 {
				t.Errorf("rewritten file: %.200s, %v", b, err)
			}
		})
	}
}

// BenchmarkFirstCallAfterRestart measures a restarted daemon's first call
// to a handshake-era child (spawn, open, tools/call): "probe" with no era
// cache (server/discover refused, then initialize), "cached" with the era
// remembered (initialize at once).
func BenchmarkFirstCallAfterRestart(b *testing.B) {
	def := pool.Server{Name: "hs", Command: os.Args[0], Env: map[string]string{demo.EnvServer: "1", demo.EnvEra: "handshake", "GORACE": "atexit_sleep_ms=0"}}
	tg := pool.Target{Server: "hs", Key: "global"}
	call := func(p *pool.Pool) {
		err := p.Do(b.Context(), tg, func(s *client.Session) error {
			_, err := s.CallTool(b.Context(), "echo", json.RawMessage(`{"message":"x"}`), nil)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	for _, cached := range []bool{false, true} {
		name := "probe"
		if cached {
			name = "cached"
		}
		b.Run(name, func(b *testing.B) {
			cacheFile := filepath.Join(b.TempDir(), "schema-cache.json")
			if cached { // learn the era once
				p := pool.New(pool.Options{ReapInterval: -1, SchemaCacheFile: cacheFile})
				p.SetServers([]pool.Server{def})
				call(p)
				p.Close(context.Background())
			}
			for b.Loop() {
				file := cacheFile
				if !cached {
					file = ""
				}
				p := pool.New(pool.Options{ReapInterval: -1, SchemaCacheFile: file})
				p.SetServers([]pool.Server{def})
				call(p)
				b.StopTimer()
				p.Close(context.Background())
				b.StartTimer()
			}
		})
	}
}
