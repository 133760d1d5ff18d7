package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"mcpx.dev/mcpx/mcp/client"
)

// mcpTarget is an MCP endpoint the MCP paths (F, G, M, M1, X) load. Every
// one is driven by the same client, mcp/client (the broker's own, as the
// other paths), over Streamable HTTP or, for mcp-hub, the legacy HTTP+SSE
// transport (legacysse.go), so their ratios compare servers. (go-sdk's
// client costs ~3× its CPU per call: on two cores it would take much of
// what the servers need.)
type mcpTarget struct {
	url    string
	sse    bool              // the legacy HTTP+SSE transport (mcp-hub) instead of Streamable HTTP
	header map[string]string // added to every request (Authorization for mcpx's TCP listener)
	// tool is the tool to call, or, when the endpoint aggregates servers and
	// renames their tools, the name it ends with after "__" (a__echo).
	tool    string
	args    json.RawMessage
	want    string       // the result's first text content must contain it ("" = any result but an error)
	version string       // 2026-07-28: server/discover first (stateless where the server is); else initialize first
	hc      *http.Client // nil: a new keep-alive client over TCP
}

// connect opens one session: server/discover, or initialize and
// initialized, and over Streamable HTTP the GET stream, as real clients do.
func (tgt *mcpTarget) connect(ctx context.Context, hc *http.Client) (*client.Session, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var t client.Transport
	if tgt.sse {
		var err error
		if t, err = dialLegacySSE(ctx, tgt.url, tgt.header, hc); err != nil {
			return nil, err
		}
	} else {
		t = client.NewHTTP(tgt.url, tgt.header, hc)
	}
	opts := client.Options{ClientName: "mcpx-bench-load", ClientVersion: "1"}
	if tgt.version < "2026-07-28" {
		opts.Era = client.EraHandshake
	}
	return client.Connect(ctx, t, opts)
}

// toolName finds the tool to call in the endpoint's tools/list: tgt.tool
// itself, or the first aggregated name ending in "__"+tgt.tool.
func (tgt *mcpTarget) toolName(ctx context.Context, s *client.Session) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	raw, err := s.Tools(ctx)
	if err != nil {
		return "", fmt.Errorf("tools/list: %w", err)
	}
	var tools []struct{ Name string }
	if err := json.Unmarshal(raw, &tools); err != nil {
		return "", fmt.Errorf("tools/list: %w", err)
	}
	var names []string
	for _, tool := range tools {
		if tool.Name == tgt.tool {
			return tool.Name, nil
		}
		names = append(names, tool.Name)
	}
	for _, name := range names {
		if strings.HasSuffix(name, "__"+tgt.tool) {
			return name, nil
		}
	}
	return "", fmt.Errorf("no tool %q (nor *__%s) among %d tools: %.300s", tgt.tool, tgt.tool, len(names), strings.Join(names, " "))
}

// mcpSessions are open sessions to one target and the tool they call;
// call takes a free session, so c callers use c sessions, one call in
// flight each (how the peers were measured in perf-anchors.md).
type mcpSessions struct {
	tgt  *mcpTarget
	name string
	free chan *client.Session
	all  []*client.Session
}

// add connects one more session.
func (ms *mcpSessions) add(ctx context.Context, hc *http.Client) (*client.Session, error) {
	s, err := ms.tgt.connect(ctx, hc)
	if err != nil {
		return nil, fmt.Errorf("session %d to %s: %w", len(ms.all)+1, ms.tgt.url, err)
	}
	ms.all = append(ms.all, s)
	return s, nil
}

func openSessions(ctx context.Context, tgt *mcpTarget, n int) (*mcpSessions, error) {
	ms := &mcpSessions{tgt: tgt, free: make(chan *client.Session, n)}
	hc := tgt.hc
	if hc == nil {
		hc = newClient(nil)
	}
	for range n {
		s, err := ms.add(ctx, hc)
		if err != nil {
			ms.close()
			return nil, err
		}
		ms.free <- s
	}
	name, err := tgt.toolName(ctx, ms.all[0])
	if err != nil {
		ms.close()
		return nil, err
	}
	ms.name = name
	return ms, nil
}

// toolResult is what call checks of a tools/call result.
type toolResult struct {
	IsError bool `json:"isError"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

func (ms *mcpSessions) call(ctx context.Context) error {
	var s *client.Session
	select {
	case s = <-ms.free:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { ms.free <- s }()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	raw, err := s.CallTool(ctx, ms.name, ms.tgt.args, nil)
	if err != nil {
		return err
	}
	var res toolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("%s: %w", ms.name, err)
	}
	if res.IsError {
		return fmt.Errorf("%s: error result %.300s", ms.name, raw)
	}
	if ms.tgt.want != "" && (len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, ms.tgt.want)) {
		return fmt.Errorf("%s: unexpected result %.300s", ms.name, raw)
	}
	return nil
}

// close ends every session (DELETE over Streamable HTTP), bounded.
func (ms *mcpSessions) close() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, s := range ms.all {
			s.Close()
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	ms.all = nil
}

// stableRSS reads pid's RSS every 250 ms until two readings in a row are
// within 0.5 % (a collector returning the load's garbage settles), for 5 s
// at most, and returns the last.
func stableRSS(pid int) int {
	prev := rssKB(pid)
	for range 20 {
		time.Sleep(250 * time.Millisecond)
		cur := rssKB(pid)
		if d := cur - prev; d*200 <= cur && -d*200 <= cur {
			return cur
		}
		prev = cur
	}
	return prev
}

// sessionMemory is the server's RSS growth per idle session.
type sessionMemory struct {
	Path         string  `json:"path"`
	Sessions     int     `json:"sessions"`
	BeforeKB     int     `json:"beforeKB"`
	AfterKB      int     `json:"afterKB"`
	PerSessionKB float64 `json:"perSessionKB"`
}

// measureSessionMemory reads pid's settled RSS, opens n sessions to tgt
// (connected and then left idle, each with its GET stream) and reads it
// again once settled. Sessions the path itself holds open for its load are
// already in the first reading. The caller closes the returned sessions.
func measureSessionMemory(ctx context.Context, path string, tgt *mcpTarget, pid, n int) (sessionMemory, *mcpSessions, error) {
	m := sessionMemory{Path: path, Sessions: n}
	if pid <= 0 {
		return m, nil, errors.New("no server process to read")
	}
	m.BeforeKB = stableRSS(pid)
	ms := &mcpSessions{tgt: tgt}
	hc := tgt.hc
	if hc == nil {
		hc = newClient(nil)
	}
	for range n {
		if _, err := ms.add(ctx, hc); err != nil {
			ms.close()
			return m, nil, err
		}
	}
	m.AfterKB = stableRSS(pid)
	m.PerSessionKB = float64(m.AfterKB-m.BeforeKB) / float64(n)
	return m, ms, nil
}
