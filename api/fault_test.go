package api_test

// The API's part of the fault suite (go test -run Fault ./...): hostile and
// broken callers must not hurt the daemon or each other.

import (
	"strings"
	"testing"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/broker/config"
)

// nested returns tool arguments nested n levels deep.
func nested(n int) string {
	return `{"message":"x","deep":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + "}"
}

// A request nested deep enough to make a go-sdk child exit is refused at the
// API; a bystander's call on the same shared child goes on undisturbed.
func TestFaultNestedDepth(t *testing.T) {
	d := startDemo(t, map[string]string{"demo": `{"scope": "global"}`})
	bystander := make(chan *response, 1)
	go func() {
		bystander <- d.unix.do(t, "POST", "/v1/servers/demo/tools/sleep", `{"ms":1500}`)
	}()
	waitLog(t, d, "sleeping 1500ms") // the bystander's call is in flight on the child

	for _, c := range []*client{d.unix, d.tcp} {
		p := c.do(t, "POST", "/v1/servers/demo/tools/echo", nested(5000)).problem(t)
		if p.Status != 400 || p.Field != "body" || !strings.Contains(p.Detail, "64 levels") || !strings.Contains(p.Detail, "limits.maxDepth") {
			t.Errorf("deep arguments: %+v; want a 400 naming the limit and limits.maxDepth", p)
		}
	}
	p := d.unix.do(t, "POST", "/v1/servers/demo/prompts/greet", `{"name":`+strings.Repeat("[", 100)+strings.Repeat("]", 100)+`}`).problem(t)
	if p.Status != 400 || !strings.Contains(p.Detail, "prompt arguments nest deeper") {
		t.Errorf("deep prompt arguments: %+v", p)
	}
	// At the limit the arguments reach the child (whose schema refuses the
	// extra field: a tool error, not a problem).
	if r := d.unix.do(t, "POST", "/v1/servers/demo/tools/echo", nested(config.DefaultMaxDepth)); r.StatusCode != 200 {
		t.Errorf("arguments at the limit: %d %s", r.StatusCode, r.body)
	}

	if res := (<-bystander).result(t); res.text() != "slept 1500ms" {
		t.Errorf("bystander: %+v", res)
	}
	waitInstance(t, d, "the calls to end", func(in broker.Instance) bool { return in.InFlight == 0 })
	var doc struct{ Instances []broker.Instance }
	d.unix.do(t, "GET", "/v1/instances", "").decode(t, &doc)
	if in := doc.Instances[0]; in.Restarts != 0 || in.State != "ready" {
		t.Errorf("the shared child was disturbed: %+v", in)
	}
}
