package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// TestCallStatsRoute: calls over the socket, over TCP and as a stream are
// all recorded, and /v1/stats gives their figures to an admin.
func TestCallStatsRoute(t *testing.T) {
	proctest.CheckNoLeaks(t)
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope":"global"}`}), StateDir: t.TempDir()})
	callPath := func(tool string) string { rt, _ := wire.Lookup(wire.OpCallTool); return rt.Path("demo", tool) }
	if res := d.Unix.Do(t, "POST", callPath("echo"), `{"message":"a"}`).Result(t); res.Text() != "a" {
		t.Fatalf("echo over the socket = %+v", res)
	}
	if res := d.TCP.Do(t, "POST", callPath("fail"), `{"message":"b"}`).Result(t); !res.IsError {
		t.Fatalf("fail over TCP = %+v", res)
	}
	resp := streamRequest(t, t.Context(), d.TCP, callPath("progress"), `{"steps":2,"delayMs":1}`, "/")
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if r := d.Unix.Do(t, "POST", callPath("strict"), `{"n":0}`); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("strict = %d %s", r.StatusCode, r.Bytes)
	}

	r := d.Unix.Do(t, "GET", "/v1/stats?by=tool&since=1h", "")
	if r.StatusCode != 200 {
		t.Fatalf("stats: %d %s", r.StatusCode, r.Bytes)
	}
	var doc wire.CallStats
	r.Decode(t, &doc)
	got := map[string][3]int{}
	for _, row := range doc.Rows {
		got[row.Key] = [3]int{row.Count, row.IsError, row.Errors}
	}
	want := map[string][3]int{"demo.echo": {1, 0, 0}, "demo.fail": {1, 1, 0}, "demo.progress": {1, 0, 0}, "demo.strict": {1, 0, 1}}
	if len(got) != len(want) || got["demo.echo"] != want["demo.echo"] || got["demo.fail"] != want["demo.fail"] ||
		got["demo.progress"] != want["demo.progress"] || got["demo.strict"] != want["demo.strict"] {
		t.Errorf("by tool = %v, want %v", got, want)
	}
	if doc.Total.Count != 4 || doc.Total.Failures != 2 || doc.Total.FailureRate != 0.5 || doc.By != "tool" || doc.Since.IsZero() {
		t.Errorf("stats = %+v", doc)
	}
	if doc.Records == nil || !doc.Records.Enabled || doc.Records.Written != 4 {
		t.Errorf("records = %+v", doc.Records)
	}

	for _, c := range []struct{ query, field string }{{"?by=host", "by"}, {"?since=yesterday", "since"}, {"?since=-1h", "since"}} {
		r := d.Unix.Do(t, "GET", "/v1/stats"+c.query, "")
		if p := r.Problem(t); r.StatusCode != 400 || !strings.Contains(p.Detail, c.field) {
			t.Errorf("%s: %d %+v, want 400 naming %s", c.query, r.StatusCode, p, c.field)
		}
	}
}

// TestCallStatsAdminOnly: the figures name callers; others get 403.
func TestCallStatsAdminOnly(t *testing.T) {
	url := serveIdentified(t, func(r *http.Request) (broker.Caller, error) {
		return broker.Caller{Name: "dev@example.com", Via: wire.ViaTailnet, Rights: rights.Rights{{Servers: []string{}}}}, nil
	})
	code, body := get(t, url+"/v1/stats")
	if code != http.StatusForbidden || !strings.Contains(string(body), "admin") {
		t.Errorf("non-admin stats: %d %s", code, body)
	}
}

// TestCallStatsUnwritable: a records directory that cannot be created
// leaves calls working, and status reports the loss.
func TestCallStatsUnwritable(t *testing.T) {
	proctest.CheckNoLeaks(t)
	state := t.TempDir()
	if err := os.WriteFile(filepath.Join(state, broker.RecordsDir), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope":"global"}`}), StateDir: state})
	for range 2 {
		if res := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"ok"}`).Result(t); res.Text() != "ok" {
			t.Fatalf("echo = %+v", res)
		}
	}
	var list wire.InstanceList
	// The writer counts the loss after the call returns.
	testenv.WaitFor(t, "two failed records", func() bool {
		r := d.Unix.Do(t, "GET", "/v1/instances", "")
		list = wire.InstanceList{}
		if err := json.Unmarshal(r.Bytes, &list); err != nil {
			t.Fatal(err)
		}
		return list.Records != nil && list.Records.Failed == 2
	})
	if rs := list.Records; rs == nil || !rs.Enabled || rs.Failed != 2 || rs.Written != 0 || !strings.Contains(rs.LastError, "records") {
		t.Errorf("instances' records = %+v, want 2 failed with the error", list.Records)
	}
}
