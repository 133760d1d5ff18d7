package api_test

// The API's part of the fault suite (go test -run Fault ./...): hostile and
// broken callers must not hurt the daemon or each other.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// nested returns tool arguments nested n levels deep.
func nested(n int) string {
	return `{"message":"x","deep":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + "}"
}

// A request nested deep enough to make a go-sdk child exit is refused at the
// API; a bystander's call on the same shared child goes on undisturbed.
func TestFaultNestedDepth(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global"}`})
	bystander := make(chan *apitest.Response, 1)
	go func() {
		bystander <- d.Unix.Do(t, "POST", "/v1/servers/demo/tools/sleep", `{"ms":1500}`)
	}()
	waitLog(t, d, "sleeping 1500ms") // the bystander's call is in flight on the child

	for _, c := range []*apitest.Client{d.Unix, d.TCP} {
		p := c.Do(t, "POST", "/v1/servers/demo/tools/echo", nested(5000)).Problem(t)
		if p.Status != 400 || p.Field != "body" || !strings.Contains(p.Detail, "64 levels") || !strings.Contains(p.Detail, "limits.maxDepth") {
			t.Errorf("deep arguments: %+v; want a 400 naming the limit and limits.maxDepth", p)
		}
	}
	p := d.Unix.Do(t, "POST", "/v1/servers/demo/prompts/greet", `{"name":`+strings.Repeat("[", 100)+strings.Repeat("]", 100)+`}`).Problem(t)
	if p.Status != 400 || !strings.Contains(p.Detail, "prompt arguments nest deeper") {
		t.Errorf("deep prompt arguments: %+v", p)
	}
	// At the limit the arguments reach the child (whose schema refuses the
	// extra field: a tool error, not a problem).
	if r := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/echo", nested(config.DefaultMaxDepth)); r.StatusCode != 200 {
		t.Errorf("arguments at the limit: %d %s", r.StatusCode, r.Bytes)
	}

	if res := (<-bystander).Result(t); res.Text() != "slept 1500ms" {
		t.Errorf("bystander: %+v", res)
	}
	waitInstance(t, d, "the calls to end", func(in broker.Instance) bool { return in.InFlight == 0 })
	var doc struct{ Instances []broker.Instance }
	d.Unix.Do(t, "GET", "/v1/instances", "").Decode(t, &doc)
	if in := doc.Instances[0]; in.Restarts != 0 || in.State != "ready" {
		t.Errorf("the shared child was disturbed: %+v", in)
	}
}

// Calls still running when the drain limit expires are answered 503 with
// Retry-After, plain or as an event stream, rather than cut off; the
// children are gone once the broker closes.
func TestFaultShutdownBeyondDrain(t *testing.T) {
	proctest.CheckNoLeaks(t)
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "global"}`}), Serve: func(o *api.ServeOptions) { o.DrainTimeout = 300 * time.Millisecond }})
	type answer struct {
		status               int
		retryAfter, ct, body string
		err                  error
	}
	call := func(c *apitest.Client, stream bool) <-chan answer {
		ch := make(chan answer, 1)
		go func() {
			req, _ := http.NewRequest("POST", c.Base+"/v1/servers/demo/tools/sleep", strings.NewReader(`{"ms":600000}`))
			if stream {
				req.Header.Set("Accept", "text/event-stream")
			}
			resp, err := c.HTTP.Do(req)
			if err != nil {
				ch <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			ch <- answer{resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Content-Type"), string(b), err}
		}()
		return ch
	}
	plain, stream := call(d.Unix, false), call(d.TCP, true)
	testenv.WaitFor(t, "both calls to reach the child", func() bool {
		return strings.Count(d.Logs.String(), "sleeping 600000ms") == 2
	})
	d.Shutdown()

	a := <-plain
	if a.err != nil || a.status != 503 || a.retryAfter == "" || a.ct != wire.MediaProblem || !strings.Contains(a.body, "drain limit") {
		t.Errorf("plain call: %+v; want a 503 problem with Retry-After", a)
	}
	a = <-stream
	var p wire.Problem
	_, errEvent, _ := strings.Cut(a.body, "event: error\n")
	ev := strings.SplitN(errEvent, "data: ", 2)
	if a.err != nil || len(ev) != 2 || !strings.HasPrefix(a.body, "event: call\n") {
		t.Fatalf("streamed call: %+v; want an error event", a)
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(ev[1])), &p); err != nil || p.Status != 503 || p.RetryAfter < 1 {
		t.Errorf("streamed call's error event: %s (%v); want a 503 problem with retryAfter", ev[1], err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Broker.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if in := d.Broker.Instances(); len(in) != 0 {
		t.Errorf("instances after close: %+v", in)
	}
}
