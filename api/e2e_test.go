package api_test

// End-to-end tests: the API over a real unix socket and loopback TCP, a real
// broker, and real demo children (this test binary re-exec'd).

import (
	"bufio"
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
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/wire"
)

// demoConfig parses a config of demo servers (this test binary as a child),
// by name; each value is a JSON object of more fields for that server ("env"
// is merged), or "".
func demoConfig(t testing.TB, servers map[string]string) *config.Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(`{"servers": {`)
	first := true
	for name, extra := range servers {
		if !first {
			b.WriteString(",")
		}
		first = false
		env := map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(t)}
		var fields map[string]json.RawMessage
		if extra != "" {
			if err := json.Unmarshal([]byte(extra), &fields); err != nil {
				t.Fatalf("server %s: %v", name, err)
			}
		}
		if e, ok := fields["env"]; ok {
			var more map[string]string
			json.Unmarshal(e, &more)
			for k, v := range more {
				env[k] = v
			}
			delete(fields, "env")
		}
		fields2 := map[string]any{"command": exe, "env": env}
		for k, v := range fields {
			fields2[k] = v
		}
		js, _ := json.Marshal(fields2)
		fmt.Fprintf(&b, "%q: %s", name, js)
	}
	b.WriteString("}}")
	cfg, err := config.Parse([]byte(b.String()), "test.json")
	if err != nil {
		t.Fatalf("config %s: %v", b.String(), err)
	}
	return cfg
}

func startDemo(t *testing.T, servers map[string]string) *daemon {
	t.Helper()
	proctest.CheckNoLeaks(t)
	return startDaemon(t, daemonOptions{cfg: demoConfig(t, servers)})
}

func cwdHeader(dir string) []string { return []string{wire.HeaderCwd, dir} }

// toolResult is the part of a CallToolResult the tests look at.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

func (r *response) result(t *testing.T) toolResult {
	t.Helper()
	if r.StatusCode != 200 {
		t.Fatalf("status %d: %s", r.StatusCode, r.body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var res toolResult
	r.decode(t, &res)
	return res
}

func (tr toolResult) text() string {
	var s []string
	for _, c := range tr.Content {
		s = append(s, c.Text)
	}
	return strings.Join(s, "\n")
}

func TestCallTool(t *testing.T) {
	d := startDemo(t, map[string]string{"demo": ""})
	dir := t.TempDir()
	for _, c := range []*client{d.unix, d.tcp} {
		res := c.do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"hello"}`, cwdHeader(dir)...).result(t)
		if res.text() != "hello" || res.IsError {
			t.Errorf("echo: %+v", res)
		}
	}
	// An empty body is no arguments.
	if res := d.unix.do(t, "POST", "/v1/servers/demo/tools/pid", "", cwdHeader(dir)...).result(t); res.text() == "" {
		t.Errorf("pid: %+v", res)
	}
	// A tool that ran and failed is a result, not an HTTP error.
	if res := d.unix.do(t, "POST", "/v1/servers/demo/tools/fail", `{"message":"nope"}`, cwdHeader(dir)...).result(t); !res.IsError || res.text() != "nope" {
		t.Errorf("fail: %+v", res)
	}
}

func TestCallToolErrors(t *testing.T) {
	d := startDemo(t, map[string]string{"demo": ""})
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
			p := d.unix.do(t, "POST", tt.path, tt.body, tt.headers...).problem(t)
			if p.Status != tt.status || p.Field != tt.field || p.Detail == "" {
				t.Errorf("problem %+v, want status %d field %q", p, tt.status, tt.field)
			}
		})
	}
	// The go-sdk demo reports arguments that fail its input schema as a
	// tool error (isError), as the 2025-11-25 spec asks, not as -32602.
	if res := d.unix.do(t, "POST", "/v1/servers/demo/tools/echo", `{"message": 5}`, cwdHeader(dir)...).result(t); !res.IsError || !strings.Contains(res.text(), "message") {
		t.Errorf("rejected arguments: %+v", res)
	}
	// The daemon keeps serving.
	if res := d.unix.do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"still here"}`, cwdHeader(dir)...).result(t); res.text() != "still here" {
		t.Errorf("after errors: %+v", res)
	}
}

// TestCrashIsBadGatewayWithStderrForTheOwner: the daemon's own user sees a
// crashed child's stderr over the socket and over TCP with the token; what
// other callers see is TestProblemMapping's.
func TestCrashIsBadGatewayWithStderrForTheOwner(t *testing.T) {
	d := startDemo(t, map[string]string{"demo": ""})
	dir := t.TempDir()
	p := d.unix.do(t, "POST", "/v1/servers/demo/tools/crash", `{"stderr":"dying words"}`, cwdHeader(dir)...).problem(t)
	if p.Status != 502 || !strings.Contains(p.StderrTail, "dying words") || !strings.Contains(p.Detail, "exited with status 3") {
		t.Errorf("unix caller: %+v", p)
	}
	p = d.tcp.do(t, "POST", "/v1/servers/demo/tools/crash", `{"stderr":"dying words"}`, cwdHeader(dir)...).problem(t)
	if p.Status != 502 || !strings.Contains(p.StderrTail, "dying words") || !strings.Contains(p.Detail, "exited with status 3") {
		t.Errorf("tcp caller with the token: %+v", p)
	}
	// The next call gets a fresh child.
	if res := d.unix.do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"again"}`, cwdHeader(dir)...).result(t); res.text() != "again" {
		t.Errorf("after crash: %+v", res)
	}
}

// event is one server-sent event.
type event struct{ name, data string }

func readEvents(t *testing.T, r io.Reader, each func(event)) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	var ev event
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev != (event{}) { // a comment alone (keep-alive) is no event
				each(ev)
			}
			ev = event{}
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data += strings.TrimPrefix(line, "data: ")
		}
	}
}

func streamRequest(t *testing.T, ctx context.Context, c *client, path, body, cwd string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", c.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Accept-Encoding", "gzip, zstd") // must not apply to streams
	req.Header.Set(wire.HeaderCwd, cwd)
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestStreamProgress(t *testing.T) {
	d := startDemo(t, map[string]string{"demo": ""})
	for _, c := range []*client{d.unix, d.tcp} {
		resp := streamRequest(t, t.Context(), c, "/v1/servers/demo/tools/progress", `{"steps":3}`, t.TempDir())
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Errorf("Content-Type %q", ct)
		}
		if ce := resp.Header.Get("Content-Encoding"); ce != "" {
			t.Errorf("stream compressed with %s", ce)
		}
		var names []string
		var progress []float64
		var result toolResult
		readEvents(t, resp.Body, func(ev event) {
			names = append(names, ev.name)
			switch ev.name {
			case "progress":
				var p struct {
					ProgressToken any     `json:"progressToken"`
					Progress      float64 `json:"progress"`
				}
				if err := json.Unmarshal([]byte(ev.data), &p); err != nil || p.ProgressToken == nil {
					t.Errorf("progress event %q: %v", ev.data, err)
				}
				progress = append(progress, p.Progress)
			case "result":
				json.Unmarshal([]byte(ev.data), &result)
			}
		})
		resp.Body.Close()
		if want := "call progress progress progress result"; strings.Join(names, " ") != want {
			t.Errorf("events %v, want %s", names, want)
		}
		if len(progress) == 3 && !(progress[0] < progress[1] && progress[1] < progress[2]) {
			t.Errorf("progress not monotonic: %v", progress)
		}
		if result.text() != "done 3" {
			t.Errorf("result %+v", result)
		}
	}
}

func TestStreamErrors(t *testing.T) {
	d := startDemo(t, map[string]string{"demo": ""})
	// A bad cwd is found before the stream starts: a plain 400, not a 200
	// stream carrying an error.
	resp0 := streamRequest(t, t.Context(), d.unix, "/v1/servers/demo/tools/echo", `{}`, "relative/dir")
	b0, _ := io.ReadAll(resp0.Body)
	resp0.Body.Close()
	if resp0.StatusCode != 400 || resp0.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("relative cwd: %d %s", resp0.StatusCode, b0)
	}
	// Unknown server: found before the stream starts, a plain 404.
	resp := streamRequest(t, t.Context(), d.unix, "/v1/servers/nope/tools/echo", `{}`, t.TempDir())
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("unknown server: %d %s", resp.StatusCode, b)
	}
	// Unknown tool: found by the child, an error event.
	resp = streamRequest(t, t.Context(), d.unix, "/v1/servers/demo/tools/nope", `{}`, t.TempDir())
	defer resp.Body.Close()
	var events []event
	readEvents(t, resp.Body, func(ev event) { events = append(events, ev) })
	if len(events) != 2 || events[0].name != "call" || events[1].name != "error" {
		t.Fatalf("events %+v, want the call's id and one error", events)
	}
	var p wire.Problem
	if err := json.Unmarshal([]byte(events[1].data), &p); err != nil || p.Status != 404 || p.Type != wire.ProblemTypeBase+"not-found" {
		t.Errorf("error event %s: %v", events[1].data, err)
	}
}

// waitInstance polls the instances list until pred holds for the server's only
// instance.
func waitInstance(t *testing.T, d *daemon, what string, pred func(broker.Instance) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var doc struct{ Instances []broker.Instance }
		d.unix.do(t, "GET", "/v1/instances", "").decode(t, &doc)
		if len(doc.Instances) == 1 && pred(doc.Instances[0]) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: instances %+v", what, doc.Instances)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitLog waits until the daemon's log (child stderr included) contains s.
func waitLog(t *testing.T, d *daemon, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(d.logs.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %q in the log:\n%s", s, d.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestDisconnectCancelsTheChildCall(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			d := startDemo(t, map[string]string{"demo": ""})
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() {
				defer close(done)
				if stream {
					resp := streamRequest(t, ctx, d.unix, "/v1/servers/demo/tools/sleep", `{"ms":600000}`, t.TempDir())
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					return
				}
				req, _ := http.NewRequestWithContext(ctx, "POST", d.unix.base+"/v1/servers/demo/tools/sleep", strings.NewReader(`{"ms":600000}`))
				req.Header.Set(wire.HeaderCwd, os.TempDir())
				if resp, err := d.unix.hc.Do(req); err == nil {
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
	d := startDemo(t, map[string]string{
		"demo":   "",
		"broken": fmt.Sprintf(`{"env": {%q: "3"}}`, demo.EnvExitAtStart),
	})
	var list wire.ToolList
	r := d.unix.do(t, "GET", "/v1/tools", "", cwdHeader(t.TempDir())...)
	if r.StatusCode != 200 {
		t.Fatalf("%d %s", r.StatusCode, r.body)
	}
	r.decode(t, &list)
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
	d.unix.do(t, "GET", "/v1/servers/demo/tools", "", cwdHeader(t.TempDir())...).decode(t, &one)
	if one.Server != "demo" || len(one.Tools) != len(names) {
		t.Errorf("one server's tools: %+v", one)
	}
}

func TestServers(t *testing.T) {
	d := startDemo(t, map[string]string{"demo": `{"description": "the demo", "scope": "global"}`})
	var list struct{ Servers []broker.ServerInfo }
	d.unix.do(t, "GET", "/v1/servers", "").decode(t, &list)
	if len(list.Servers) != 1 || list.Servers[0].Name != "demo" || list.Servers[0].Description != "the demo" {
		t.Errorf("servers %+v", list)
	}
	var one broker.ServerInfo
	d.unix.do(t, "GET", "/v1/servers/demo", "").decode(t, &one)
	if one.Scope != config.ScopeGlobal {
		t.Errorf("server %+v", one)
	}
	if p := d.unix.do(t, "GET", "/v1/servers/nope", "").problem(t); p.Status != 404 {
		t.Errorf("unknown server: %+v", p)
	}
}

func TestResourcesAndPrompts(t *testing.T) {
	d := startDemo(t, map[string]string{"demo": `{"scope": "global"}`})
	var res struct{ Resources []struct{ URI string } }
	d.unix.do(t, "GET", "/v1/servers/demo/resources", "").decode(t, &res)
	if len(res.Resources) == 0 || res.Resources[0].URI != "demo://readme" {
		t.Errorf("resources %+v", res)
	}
	r := d.unix.do(t, "GET", "/v1/servers/demo/resources/read?uri=demo://readme", "")
	if r.StatusCode != 200 || !strings.Contains(string(r.body), `"contents"`) {
		t.Errorf("read: %d %s", r.StatusCode, r.body)
	}
	if p := d.unix.do(t, "GET", "/v1/servers/demo/resources/read?uri=demo://nope", "").problem(t); p.Status/100 != 4 && p.Status != 502 {
		t.Errorf("unknown resource: %+v", p)
	}

	var prompts struct{ Prompts []struct{ Name string } }
	d.unix.do(t, "GET", "/v1/servers/demo/prompts", "").decode(t, &prompts)
	if len(prompts.Prompts) == 0 || prompts.Prompts[0].Name != "greet" {
		t.Errorf("prompts %+v", prompts)
	}
	r = d.unix.do(t, "POST", "/v1/servers/demo/prompts/greet", `{"name":"Ada"}`)
	if r.StatusCode != 200 || !strings.Contains(string(r.body), "Ada") {
		t.Errorf("greet: %d %s", r.StatusCode, r.body)
	}
}

func TestInstancesAndStop(t *testing.T) {
	d := startDemo(t, map[string]string{"demo": ""})
	dir := t.TempDir()
	d.unix.do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"x"}`, cwdHeader(dir)...).result(t)
	var doc struct{ Instances []broker.Instance }
	d.unix.do(t, "GET", "/v1/instances", "").decode(t, &doc)
	if len(doc.Instances) != 1 {
		t.Fatalf("instances %+v", doc.Instances)
	}
	in := doc.Instances[0]
	if in.Server != "demo" || in.Pid == 0 || in.Calls != 1 || in.Root == "" {
		t.Errorf("instance %+v", in)
	}
	if r := d.unix.do(t, "DELETE", "/v1/instances/"+in.ID, ""); r.StatusCode != 204 {
		t.Fatalf("stop: %d %s", r.StatusCode, r.body)
	}
	if p := d.unix.do(t, "DELETE", "/v1/instances/"+in.ID, "").problem(t); p.Status != 404 {
		t.Errorf("stopping again: %+v", p)
	}
}

func TestExhaustedHasRetryAfter(t *testing.T) {
	d := startDemo(t, map[string]string{"demo": `{"scope": "cwd", "max": 1}`})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp := streamRequest(t, ctx, d.unix, "/v1/servers/demo/tools/sleep", `{"ms":600000}`, t.TempDir())
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	waitLog(t, d, "sleeping 600000ms")
	r := d.unix.do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"x"}`, cwdHeader(t.TempDir())...)
	p := r.problem(t)
	if p.Status != 503 || p.Type != wire.ProblemTypeBase+"exhausted" || r.Header.Get("Retry-After") == "" {
		t.Errorf("problem %+v, Retry-After %q", p, r.Header.Get("Retry-After"))
	}
	cancel()
	<-done
}

func TestCompressedJSON(t *testing.T) {
	d := startDemo(t, map[string]string{"demo": `{"scope": "global"}`})
	for _, enc := range []string{"zstd", "gzip"} {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", d.unix.base+"/v1/servers/demo/tools/big", strings.NewReader(`{"bytes":100000}`))
		req.Header.Set("Accept-Encoding", enc)
		resp, err := d.unix.hc.Do(req)
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
		var res toolResult
		if err := json.Unmarshal(b, &res); err != nil || len(res.text()) != 100000 {
			t.Errorf("%s: %d bytes of text, %v", enc, len(res.text()), err)
		}
	}
}

func TestConcurrentCallersLandOnTheirOwnInstances(t *testing.T) {
	d := startDemo(t, map[string]string{"demo": `{"scope": "cwd", "max": 10}`})
	dirs := make([]string, 5)
	for i := range dirs {
		dirs[i] = t.TempDir()
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			dir := dirs[i%len(dirs)]
			c := d.unix
			if i%2 == 1 {
				c = d.tcp
			}
			msg := fmt.Sprintf("call %d", i)
			body, _ := json.Marshal(map[string]string{"message": msg})
			if res := c.do(t, "POST", "/v1/servers/demo/tools/echo", string(body), cwdHeader(dir)...).result(t); res.text() != msg {
				t.Errorf("%s: got %q", msg, res.text())
			}
			if res := c.do(t, "POST", "/v1/servers/demo/tools/cwd", "", cwdHeader(dir)...).result(t); res.text() != dir {
				t.Errorf("cwd from %s: got %q", dir, res.text())
			}
		})
	}
	wg.Wait()
	var doc struct{ Instances []broker.Instance }
	d.unix.do(t, "GET", "/v1/instances", "").decode(t, &doc)
	if len(doc.Instances) != len(dirs) {
		t.Errorf("%d instances, want %d", len(doc.Instances), len(dirs))
	}
}

func TestOversizedBodyOverRealBroker(t *testing.T) {
	d := startDemo(t, map[string]string{"demo": ""})
	big := `{"message":"` + strings.Repeat("x", api.DefaultMaxBodyBytes) + `"}`
	if p := d.unix.do(t, "POST", "/v1/servers/demo/tools/echo", big, cwdHeader(t.TempDir())...).problem(t); p.Status != 413 {
		t.Errorf("problem %+v", p)
	}
	var buf bytes.Buffer
	buf.WriteString(`{"message":"ok"}`)
	if res := d.unix.do(t, "POST", "/v1/servers/demo/tools/echo", buf.String(), cwdHeader(t.TempDir())...).result(t); res.text() != "ok" {
		t.Errorf("after 413: %+v", res)
	}
}

// A long call with nothing to report keeps its stream alive with comments,
// which SSE clients ignore, and still ends with the result.
func TestStreamKeepAlive(t *testing.T) {
	proctest.CheckNoLeaks(t)
	d := startDaemon(t, daemonOptions{cfg: demoConfig(t, map[string]string{"demo": ""}), keepAlive: 20 * time.Millisecond})
	resp := streamRequest(t, t.Context(), d.unix, "/v1/servers/demo/tools/sleep", `{"ms":300}`, t.TempDir())
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
