package api_test

// End-to-end tests: the API over a real unix socket and loopback TCP, a real
// broker, and real demo children (this test binary re-exec'd).

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

func cwdHeader(dir string) []string { return []string{wire.HeaderCwd, dir} }

func TestCallTool(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": ""})
	dir := t.TempDir()
	for _, c := range []*apitest.Client{d.Unix, d.TCP} {
		res := c.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"hello"}`, cwdHeader(dir)...).Result(t)
		if res.Text() != "hello" || res.IsError {
			t.Errorf("echo: %+v", res)
		}
	}
	// An empty body is no arguments.
	if res := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/pid", "", cwdHeader(dir)...).Result(t); res.Text() == "" {
		t.Errorf("pid: %+v", res)
	}
	// A tool that ran and failed is a result, not an HTTP error.
	if res := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/fail", `{"message":"nope"}`, cwdHeader(dir)...).Result(t); !res.IsError || res.Text() != "nope" {
		t.Errorf("fail: %+v", res)
	}
}

func TestCallToolErrors(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": ""})
	dir := t.TempDir()
	tests := []struct {
		name, path, body string
		headers          []string
		status           int
		field            string
	}{
		{"unknown server", "/v1/servers/nope/tools/echo", `{}`, cwdHeader(dir), 404, ""},
		{"unknown tool", "/v1/servers/demo/tools/nope", `{}`, cwdHeader(dir), 404, ""},
		{"relative cwd", "/v1/servers/demo/tools/echo", `{"message":"x"}`, cwdHeader("some/dir"), 400, wire.HeaderCwd},
		{"missing cwd", "/v1/servers/demo/tools/echo", `{"message":"x"}`, cwdHeader(filepath.Join(dir, "gone")), 400, wire.HeaderCwd},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := d.Unix.Do(t, "POST", tt.path, tt.body, tt.headers...).Problem(t)
			if p.Status != tt.status || p.Field != tt.field || p.Detail == "" {
				t.Errorf("problem %+v, want status %d field %q", p, tt.status, tt.field)
			}
		})
	}
	// The go-sdk demo reports arguments that fail its input schema as a
	// tool error (isError), as the 2025-11-25 spec asks, not as -32602.
	if res := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message": 5}`, cwdHeader(dir)...).Result(t); !res.IsError || !strings.Contains(res.Text(), "message") {
		t.Errorf("rejected arguments: %+v", res)
	}
	// The daemon keeps serving.
	if res := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"still here"}`, cwdHeader(dir)...).Result(t); res.Text() != "still here" {
		t.Errorf("after errors: %+v", res)
	}
}

// TestCrashIsBadGatewayWithStderrForTheOwner: the daemon's own user sees a
// crashed child's stderr over the socket and over TCP with the token; what
// other callers see is TestProblemMapping's.
func TestCrashIsBadGatewayWithStderrForTheOwner(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": ""})
	dir := t.TempDir()
	p := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/crash", `{"stderr":"dying words"}`, cwdHeader(dir)...).Problem(t)
	if p.Status != 502 || !strings.Contains(p.StderrTail, "dying words") || !strings.Contains(p.Detail, "exited with status 3") {
		t.Errorf("unix caller: %+v", p)
	}
	p = d.TCP.Do(t, "POST", "/v1/servers/demo/tools/crash", `{"stderr":"dying words"}`, cwdHeader(dir)...).Problem(t)
	if p.Status != 502 || !strings.Contains(p.StderrTail, "dying words") || !strings.Contains(p.Detail, "exited with status 3") {
		t.Errorf("tcp caller with the token: %+v", p)
	}
	// The next call gets a fresh child.
	if res := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"again"}`, cwdHeader(dir)...).Result(t); res.Text() != "again" {
		t.Errorf("after crash: %+v", res)
	}
}

func streamRequest(t *testing.T, ctx context.Context, c *apitest.Client, path, body, cwd string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", c.Base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Accept-Encoding", "gzip, zstd") // must not apply to streams
	req.Header.Set(wire.HeaderCwd, cwd)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestStreamProgress(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": ""})
	for _, c := range []*apitest.Client{d.Unix, d.TCP} {
		resp := streamRequest(t, t.Context(), c, "/v1/servers/demo/tools/progress", `{"steps":3}`, t.TempDir())
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Errorf("Content-Type %q", ct)
		}
		if ce := resp.Header.Get("Content-Encoding"); ce != "" {
			t.Errorf("stream compressed with %s", ce)
		}
		var names []string
		var progress []float64
		var result apitest.ToolResult
		apitest.ReadEvents(t, resp.Body, func(ev apitest.Event) {
			names = append(names, ev.Name)
			switch ev.Name {
			case "progress":
				var p struct {
					ProgressToken any     `json:"progressToken"`
					Progress      float64 `json:"progress"`
				}
				if err := json.Unmarshal([]byte(ev.Data), &p); err != nil || p.ProgressToken == nil {
					t.Errorf("progress event %q: %v", ev.Data, err)
				}
				progress = append(progress, p.Progress)
			case "result":
				json.Unmarshal([]byte(ev.Data), &result)
			case "context":
				var where wire.CallContext
				if err := json.Unmarshal([]byte(ev.Data), &where); err != nil || where.Server != "demo" || where.Tool != "progress" || where.Instance == "" {
					t.Errorf("context event %q: %v", ev.Data, err)
				}
			}
		})
		resp.Body.Close()
		if want := "call progress progress progress context result"; strings.Join(names, " ") != want {
			t.Errorf("events %v, want %s", names, want)
		}
		if len(progress) == 3 && !(progress[0] < progress[1] && progress[1] < progress[2]) {
			t.Errorf("progress not monotonic: %v", progress)
		}
		if result.Text() != "done 3" {
			t.Errorf("result %+v", result)
		}
	}
}

func TestStreamErrors(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": ""})
	// A bad cwd is found before the stream starts: a plain 400, not a 200
	// stream carrying an error.
	resp0 := streamRequest(t, t.Context(), d.Unix, "/v1/servers/demo/tools/echo", `{}`, "relative/dir")
	b0, _ := io.ReadAll(resp0.Body)
	resp0.Body.Close()
	if resp0.StatusCode != 400 || resp0.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("relative cwd: %d %s", resp0.StatusCode, b0)
	}
	// Unknown server: found before the stream starts, a plain 404.
	resp := streamRequest(t, t.Context(), d.Unix, "/v1/servers/nope/tools/echo", `{}`, t.TempDir())
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("unknown server: %d %s", resp.StatusCode, b)
	}
	// Unknown tool: found by the child, an error event.
	resp = streamRequest(t, t.Context(), d.Unix, "/v1/servers/demo/tools/nope", `{}`, t.TempDir())
	defer resp.Body.Close()
	var events []apitest.Event
	apitest.ReadEvents(t, resp.Body, func(ev apitest.Event) { events = append(events, ev) })
	if len(events) != 2 || events[0].Name != "call" || events[1].Name != "error" {
		t.Fatalf("events %+v, want the call's id and one error", events)
	}
	var p wire.Problem
	if err := json.Unmarshal([]byte(events[1].Data), &p); err != nil || p.Status != 404 || p.Type != wire.ProblemTypeBase+"not-found" {
		t.Errorf("error event %s: %v", events[1].Data, err)
	}
}

// waitInstance polls the instances list until pred holds for the server's only
// instance.
func waitInstance(t *testing.T, d *apitest.Daemon, what string, pred func(broker.Instance) bool) {
	t.Helper()
	testenv.WaitFor(t, what, func() bool {
		var doc struct{ Instances []broker.Instance }
		d.Unix.Do(t, "GET", "/v1/instances", "").Decode(t, &doc)
		return len(doc.Instances) == 1 && pred(doc.Instances[0])
	})
}

// waitLog waits until the daemon's log (child stderr included) contains s.
func waitLog(t *testing.T, d *apitest.Daemon, s string) {
	t.Helper()
	testenv.WaitFor(t, fmt.Sprintf("%q in the log", s), func() bool { return strings.Contains(d.Logs.String(), s) })
}

func TestDisconnectCancelsTheChildCall(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			d := apitest.StartDemo(t, map[string]string{"demo": ""})
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() {
				defer close(done)
				if stream {
					resp := streamRequest(t, ctx, d.Unix, "/v1/servers/demo/tools/sleep", `{"ms":600000}`, t.TempDir())
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					return
				}
				req, _ := http.NewRequestWithContext(ctx, "POST", d.Unix.Base+"/v1/servers/demo/tools/sleep", strings.NewReader(`{"ms":600000}`))
				req.Header.Set(wire.HeaderCwd, os.TempDir())
				if resp, err := d.Unix.HTTP.Do(req); err == nil {
					resp.Body.Close()
				}
			}()
			waitLog(t, d, "sleeping 600000ms") // the child has the call
			cancel()
			<-done
			waitInstance(t, d, "the call to end", func(in broker.Instance) bool { return in.InFlight == 0 })
			waitLog(t, d, "cancelled sleep") // the child saw notifications/cancelled
		})
	}
}

func TestToolsAcrossServers(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{
		"demo":   "",
		"broken": fmt.Sprintf(`{"env": {%q: "3"}}`, demo.EnvExitAtStart),
	})
	var list wire.ToolList
	r := d.Unix.Do(t, "GET", "/v1/tools", "", cwdHeader(t.TempDir())...)
	if r.StatusCode != 200 {
		t.Fatalf("%d %s", r.StatusCode, r.Bytes)
	}
	r.Decode(t, &list)
	var names []string
	for _, raw := range list.Tools {
		var tool struct{ Server, Name string }
		json.Unmarshal(raw, &tool)
		if tool.Server != "demo" {
			t.Errorf("tool %s tagged %q", raw, tool.Server)
		}
		names = append(names, tool.Name)
	}
	if !strings.Contains(strings.Join(names, " "), "echo") {
		t.Errorf("tools %v lack echo", names)
	}
	if len(list.Errors) != 1 || list.Errors[0].Server != "broken" || list.Errors[0].Status != 502 {
		t.Errorf("errors %+v, want one for broken", list.Errors)
	}

	var one struct {
		Server string
		Tools  []struct{ Name string }
	}
	d.Unix.Do(t, "GET", "/v1/servers/demo/tools", "", cwdHeader(t.TempDir())...).Decode(t, &one)
	if one.Server != "demo" || len(one.Tools) != len(names) {
		t.Errorf("one server's tools: %+v", one)
	}
}

func TestServers(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"description": "the demo", "scope": "global"}`})
	var list struct{ Servers []broker.ServerInfo }
	d.Unix.Do(t, "GET", "/v1/servers", "").Decode(t, &list)
	if len(list.Servers) != 1 || list.Servers[0].Name != "demo" || list.Servers[0].Description != "the demo" {
		t.Errorf("servers %+v", list)
	}
	var one broker.ServerInfo
	d.Unix.Do(t, "GET", "/v1/servers/demo", "").Decode(t, &one)
	if one.Scope != config.ScopeGlobal {
		t.Errorf("server %+v", one)
	}
	if p := d.Unix.Do(t, "GET", "/v1/servers/nope", "").Problem(t); p.Status != 404 {
		t.Errorf("unknown server: %+v", p)
	}
}

func TestResourcesAndPrompts(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global"}`})
	var res struct{ Resources []struct{ URI string } }
	d.Unix.Do(t, "GET", "/v1/servers/demo/resources", "").Decode(t, &res)
	if len(res.Resources) == 0 || res.Resources[0].URI != "demo://readme" {
		t.Errorf("resources %+v", res)
	}
	r := d.Unix.Do(t, "GET", "/v1/servers/demo/resources/read?uri=demo://readme", "")
	if r.StatusCode != 200 || !strings.Contains(string(r.Bytes), `"contents"`) {
		t.Errorf("read: %d %s", r.StatusCode, r.Bytes)
	}
	if p := d.Unix.Do(t, "GET", "/v1/servers/demo/resources/read?uri=demo://nope", "").Problem(t); p.Status/100 != 4 && p.Status != 502 {
		t.Errorf("unknown resource: %+v", p)
	}

	var prompts struct{ Prompts []struct{ Name string } }
	d.Unix.Do(t, "GET", "/v1/servers/demo/prompts", "").Decode(t, &prompts)
	if len(prompts.Prompts) == 0 || prompts.Prompts[0].Name != "greet" {
		t.Errorf("prompts %+v", prompts)
	}
	r = d.Unix.Do(t, "POST", "/v1/servers/demo/prompts/greet", `{"name":"Ada"}`)
	if r.StatusCode != 200 || !strings.Contains(string(r.Bytes), "Ada") {
		t.Errorf("greet: %d %s", r.StatusCode, r.Bytes)
	}
}

func TestInstancesAndStop(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": ""})
	dir := t.TempDir()
	d.Unix.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"x"}`, cwdHeader(dir)...).Result(t)
	var doc struct{ Instances []broker.Instance }
	d.Unix.Do(t, "GET", "/v1/instances", "").Decode(t, &doc)
	if len(doc.Instances) != 1 {
		t.Fatalf("instances %+v", doc.Instances)
	}
	in := doc.Instances[0]
	if in.Server != "demo" || in.Pid == 0 || in.Calls != 1 || in.Root == "" {
		t.Errorf("instance %+v", in)
	}
	if r := d.Unix.Do(t, "DELETE", "/v1/instances/"+in.ID, ""); r.StatusCode != 204 {
		t.Fatalf("stop: %d %s", r.StatusCode, r.Bytes)
	}
	if p := d.Unix.Do(t, "DELETE", "/v1/instances/"+in.ID, "").Problem(t); p.Status != 404 {
		t.Errorf("stopping again: %+v", p)
	}
}

func TestExhaustedHasRetryAfter(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "cwd", "max": 1}`})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp := streamRequest(t, ctx, d.Unix, "/v1/servers/demo/tools/sleep", `{"ms":600000}`, t.TempDir())
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	waitLog(t, d, "sleeping 600000ms")
	r := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"x"}`, cwdHeader(t.TempDir())...)
	p := r.Problem(t)
	if p.Status != 503 || p.Type != wire.ProblemTypeBase+"exhausted" || r.Header.Get("Retry-After") == "" {
		t.Errorf("problem %+v, Retry-After %q", p, r.Header.Get("Retry-After"))
	}
	cancel()
	<-done
}

func TestCompressedJSON(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global"}`})
	for _, enc := range []string{"zstd", "gzip"} {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", d.Unix.Base+"/v1/servers/demo/tools/big", strings.NewReader(`{"bytes":100000}`))
		req.Header.Set("Accept-Encoding", enc)
		resp, err := d.Unix.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if got := resp.Header.Get("Content-Encoding"); got != enc {
			t.Fatalf("Content-Encoding %q, want %s", got, enc)
		}
		var body io.Reader
		if enc == "zstd" {
			zr, err := zstd.NewReader(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			defer zr.Close()
			body = zr
		} else {
			gr, err := gzip.NewReader(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			body = gr
		}
		b, err := io.ReadAll(body)
		if err != nil {
			t.Fatal(err)
		}
		var res apitest.ToolResult
		if err := json.Unmarshal(b, &res); err != nil || len(res.Text()) != 100000 {
			t.Errorf("%s: %d bytes of text, %v", enc, len(res.Text()), err)
		}
	}
}

func TestConcurrentCallersLandOnTheirOwnInstances(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "cwd", "max": 10}`})
	dirs := make([]string, 5)
	for i := range dirs {
		dirs[i] = t.TempDir()
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			dir := dirs[i%len(dirs)]
			c := d.Unix
			if i%2 == 1 {
				c = d.TCP
			}
			msg := fmt.Sprintf("call %d", i)
			body, _ := json.Marshal(map[string]string{"message": msg})
			if res := c.Do(t, "POST", "/v1/servers/demo/tools/echo", string(body), cwdHeader(dir)...).Result(t); res.Text() != msg {
				t.Errorf("%s: got %q", msg, res.Text())
			}
			if res := c.Do(t, "POST", "/v1/servers/demo/tools/cwd", "", cwdHeader(dir)...).Result(t); res.Text() != dir {
				t.Errorf("cwd from %s: got %q", dir, res.Text())
			}
		})
	}
	wg.Wait()
	var doc struct{ Instances []broker.Instance }
	d.Unix.Do(t, "GET", "/v1/instances", "").Decode(t, &doc)
	if len(doc.Instances) != len(dirs) {
		t.Errorf("%d instances, want %d", len(doc.Instances), len(dirs))
	}
}

func TestOversizedBodyOverRealBroker(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": ""})
	big := `{"message":"` + strings.Repeat("x", api.DefaultMaxBodyBytes) + `"}`
	if p := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/echo", big, cwdHeader(t.TempDir())...).Problem(t); p.Status != 413 {
		t.Errorf("problem %+v", p)
	}
	var buf bytes.Buffer
	buf.WriteString(`{"message":"ok"}`)
	if res := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/echo", buf.String(), cwdHeader(t.TempDir())...).Result(t); res.Text() != "ok" {
		t.Errorf("after 413: %+v", res)
	}
}

// A long call with nothing to report keeps its stream alive with comments,
// which SSE clients ignore, and still ends with the result.
func TestStreamKeepAlive(t *testing.T) {
	proctest.CheckNoLeaks(t)
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": ""}), API: func(o *api.Options) { o.KeepAlive = 20 * time.Millisecond }})
	resp := streamRequest(t, t.Context(), d.Unix, "/v1/servers/demo/tools/sleep", `{"ms":300}`, t.TempDir())
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := string(body)
	if !strings.Contains(s, ": keep-alive\n\n") || !strings.Contains(s, "event: result\n") {
		t.Errorf("stream %q: want keep-alive comments and then the result", s)
	}
	if strings.Index(s, ": keep-alive") > strings.Index(s, "event: result") {
		t.Errorf("no keep-alive before the result: %q", s)
	}
}
