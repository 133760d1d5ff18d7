package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// hub is a running mcp-hub (ravitemer, npm, pinned in testdata/npm), the
// aggregating gateway the G and Gr paths measure: two stdio upstreams, a and
// b, the same server (`mcpx demo-server`, or for Gr the minimal echo child),
// behind its one MCP endpoint, GET /mcp, which speaks
// the legacy HTTP+SSE transport (POST /messages?sessionId=…), not
// Streamable HTTP. Its tools are named a__echo and b__echo.
type hub struct {
	cmd    *exec.Cmd
	url    string // the MCP endpoint
	log    *os.File
	exited chan struct{}
}

// hubCLI finds mcp-hub's entry script under the module's testdata/npm
// (npm ci --prefix testdata/npm installs it).
func hubCLI(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("finding the module (run inside it, or pass -hub): %v", err)
	}
	cli := filepath.Join(filepath.Dir(gomod), "testdata", "npm", "node_modules", "mcp-hub", "dist", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		return "", fmt.Errorf("mcp-hub is not installed (npm ci --prefix testdata/npm): %w", err)
	}
	return cli, nil
}

// startHub starts mcp-hub in dir with its own HOME and XDG directories and
// waits until both upstreams are connected.
//
// Two things keep it off the network: at start it fetches a marketplace
// catalogue from ravitemer.github.io unless its cache holds a non-empty one
// younger than an hour, so a one-entry catalogue is written first; and it
// has no host flag (app.listen(port) binds every interface), so the port is
// a free one, for the run's length only.
func startHub(ctx context.Context, node, cli string, upstream map[string]any, dir string) (*hub, error) {
	home, data, state := filepath.Join(dir, "home"), filepath.Join(dir, "data"), filepath.Join(dir, "state")
	cache := filepath.Join(data, "mcp-hub", "cache")
	for _, d := range []string{home, cache, state} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	catalogue := map[string]any{
		"registry":            map[string]any{"version": "bench", "generatedAt": 0, "totalServers": 1, "servers": []any{map[string]any{"id": "bench", "name": "bench"}}},
		"lastFetchedAt":       time.Now().UnixMilli(),
		"serverDocumentation": map[string]any{},
	}
	cfg := map[string]any{"mcpServers": map[string]any{"a": upstream, "b": upstream}}
	if err := writeJSONFile(filepath.Join(cache, "registry.json"), catalogue); err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "mcp-hub.json")
	if err := writeJSONFile(cfgPath, cfg); err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	logf, err := os.Create(filepath.Join(dir, "mcp-hub.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(node, cli, "--port", port, "--config", cfgPath)
	cmd.Dir = dir
	cmd.Env = append(withoutEnv(os.Environ(), "HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"),
		"HOME="+home, "XDG_DATA_HOME="+data, "XDG_STATE_HOME="+state,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"))
	cmd.Stdout, cmd.Stderr = logf, logf // it logs every session's close thousands of times
	cmd.SysProcAttr = childAttr()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true // so stop reaches its children too
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	h := &hub{cmd: cmd, url: "http://127.0.0.1:" + port + "/mcp", log: logf, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(h.exited)
	}()
	if err := h.waitReady(ctx, "http://127.0.0.1:"+port+"/api/health"); err != nil {
		h.stop()
		return nil, err
	}
	return h, nil
}

// waitReady polls the health endpoint until the hub is ready with both
// upstreams connected (until then GET /mcp answers 500), for 30 s at most.
func (h *hub) waitReady(ctx context.Context, health string) error {
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for {
		select {
		case <-h.exited:
			return fmt.Errorf("mcp-hub exited; its log: %s", tailFile(h.log.Name()))
		default:
		}
		if ok, body := hubReady(ctx, health); ok {
			return nil
		} else {
			last = body
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("mcp-hub not ready after 30s (health: %.300s); its log: %s", last, tailFile(h.log.Name()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func hubReady(ctx context.Context, health string) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, health, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var st struct {
		State   string `json:"state"`
		Servers []struct {
			Status string `json:"status"`
		} `json:"servers"`
	}
	if json.Unmarshal(body, &st) != nil || st.State != "ready" || len(st.Servers) != 2 {
		return false, string(body)
	}
	for _, s := range st.Servers {
		if s.Status != "connected" {
			return false, string(body)
		}
	}
	return true, ""
}

func (h *hub) pid() int { return h.cmd.Process.Pid }

// stop sends SIGTERM (mcp-hub stops its children and exits within a few
// seconds), then kills its whole process group.
func (h *hub) stop() {
	h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.exited:
	case <-time.After(10 * time.Second):
	}
	syscall.Kill(-h.pid(), syscall.SIGKILL) // whatever is left of the group
	<-h.exited
	h.log.Close()
}

func writeJSONFile(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

func withoutEnv(env []string, names ...string) []string {
	var out []string
outer:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue outer
			}
		}
		out = append(out, kv)
	}
	return out
}

func tailFile(path string) string {
	data, _ := os.ReadFile(path)
	if len(data) > 2000 {
		data = data[len(data)-2000:]
	}
	return string(data)
}
