package tsnet_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/tsnet"
)

// claudeCode is Claude Code (npm @anthropic-ai/claude-code, pinned in
// testdata/npm) on a tailnet machine, with the broker's /mcp added by URL
// and nothing else: no token, no header. It reaches the tailnet as it
// would through tailscaled in userspace mode (--outbound-http-proxy-listen):
// an HTTP proxy that dials through the laptop's node. The proxy records
// every path asked for.
type claudeCode struct {
	bin, home, dir, proxy string

	mu    sync.Mutex
	paths []string // guarded by mu
}

func newClaudeCode(t *testing.T, laptop *tsnet.Node, dir string) *claudeCode {
	t.Helper()
	c := &claudeCode{bin: testenv.NPMPackageBin(t, "@anthropic-ai/claude-code"), home: t.TempDir(), dir: dir}
	hc, err := laptop.HTTPClient()
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{Transport: hc.Transport, FlushInterval: -1,
		Rewrite: func(r *httputil.ProxyRequest) { r.Out.URL, r.Out.Host = r.In.URL, r.In.Host }}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.paths = append(c.paths, r.Method+" "+r.URL.Path)
		c.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	c.proxy = proxy.URL
	c.run(t, "mcp", "add", "--transport", "http", "-s", "user", "mcpx", "http://broker.tail-scale.ts.net/mcp")
	return c
}

func (c *claudeCode) run(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "HOME="+c.home, "CLAUDE_CONFIG_DIR=", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"HTTP_PROXY="+c.proxy, "http_proxy="+c.proxy, "NO_PROXY=", "no_proxy=", proctest.Env(t))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// list is `claude mcp list`'s line for mcpx (it exits 0 whatever the
// server's health), and the paths asked for meanwhile.
func (c *claudeCode) list(t *testing.T) (string, []string) {
	t.Helper()
	c.mu.Lock()
	c.paths = nil
	c.mu.Unlock()
	out := c.run(t, "mcp", "list")
	c.mu.Lock()
	defer c.mu.Unlock()
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "mcpx: ") {
			return strings.TrimSpace(line), c.paths
		}
	}
	t.Fatalf("claude mcp list names no mcpx:\n%s", out)
	return "", nil
}

// wantNoOAuth fails if a client asked for anything of OAuth's.
func wantNoOAuth(t *testing.T, paths []string) {
	t.Helper()
	for _, p := range paths {
		if strings.Contains(p, "/.well-known/") || strings.HasSuffix(p, " /register") {
			t.Errorf("Claude Code went looking for OAuth: %s (all: %q)", p, paths)
		}
	}
}

// claudeDir is a directory for Claude Code under root (its root is its cwd).
func claudeDir(t *testing.T, root string) string {
	t.Helper()
	d := filepath.Join(root, "claude")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}
