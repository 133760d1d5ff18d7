package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// The npm reference server through the whole HTTP path: its progress reaches
// an SSE caller as it happens, and a caller that hangs up mid-stream frees
// the call without costing the child.
func TestEverythingProgressOverSSEAndDisconnect(t *testing.T) {
	proctest.CheckNoLeaks(t)
	doc, _ := json.Marshal(map[string]any{"servers": map[string]any{"everything": map[string]any{
		"command": testenv.Node(t),
		"args":    []string{testenv.NPMPackageBin(t, "@modelcontextprotocol/server-everything")},
		"env":     map[string]string{proctest.MarkerEnv: proctest.Marker(t)},
		"scope":   "global",
	}}})
	cfg, err := config.Parse(doc, "everything.json")
	if err != nil {
		t.Fatal(err)
	}
	d := apitest.Start(t, apitest.Options{Config: cfg})
	const path = "/v1/servers/everything/tools/trigger-long-running-operation"

	resp := streamRequest(t, t.Context(), d.Unix, path, `{"duration":0.4,"steps":4}`, t.TempDir())
	var names []string
	var result apitest.ToolResult
	apitest.ReadEvents(t, resp.Body, func(ev apitest.Event) {
		names = append(names, ev.Name)
		if ev.Name == "result" {
			json.Unmarshal([]byte(ev.Data), &result)
		}
	})
	resp.Body.Close()
	if len(names) < 4 || names[len(names)-1] != "result" || names[0] != "call" || names[1] != "progress" {
		t.Fatalf("events %v, want the call's id, progress events, then the result", names)
	}
	if !strings.Contains(result.Text(), "Long running operation completed") {
		t.Errorf("result %+v", result)
	}

	// Hang up after the first progress event of a 50 s operation.
	ctx, cancel := context.WithCancel(t.Context())
	resp = streamRequest(t, ctx, d.Unix, path, `{"duration":50,"steps":50}`, t.TempDir())
	br := bufio.NewReader(resp.Body)
	var lines []string
	for len(lines) < 8 && !slices.Contains(lines, "event: progress\n") {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("after %q: %v; want a progress event", lines, err)
		}
		lines = append(lines, line)
	}
	if !slices.Contains(lines, "event: progress\n") {
		t.Fatalf("first lines %q; want the call's id, then a progress event", lines)
	}
	cancel()
	resp.Body.Close()
	waitInstance(t, d, "the abandoned call to end", func(in broker.Instance) bool { return in.InFlight == 0 })
	if r := d.Unix.Do(t, "POST", "/v1/servers/everything/tools/echo", `{"message":"after"}`, cwdHeader(t.TempDir())...).Result(t); r.Text() != "Echo: after" {
		t.Errorf("echo after the hang-up = %+v", r)
	}
}
