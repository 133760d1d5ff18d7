package api_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// TestRestartServer: POST /v1/servers/{server}/restart drains the running
// instance (its call in flight finishes on the old child) and starts a new
// child under the same key at once, with no caller; an unknown server is a
// 404 with a did-you-mean.
func TestRestartServer(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global"}`})
	old := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/pid", `{}`).Result(t).Text()
	slow := make(chan string, 1)
	go func() {
		slow <- d.Unix.Do(t, "POST", "/v1/servers/demo/tools/sleep", `{"ms": 300}`).Result(t).Text()
	}()
	waitInFlight(t, d, 1)

	var res wire.Restarted
	r := d.Unix.Do(t, "POST", "/v1/servers/demo/restart", "")
	r.Decode(t, &res)
	if r.StatusCode != 200 || res.Server != "demo" || len(res.Replaced) != 1 || len(res.Stopped) != 0 {
		t.Fatalf("restart: %d %+v", r.StatusCode, res)
	}
	if got := <-slow; !strings.Contains(got, "slept") {
		t.Errorf("the call in flight during the restart got %q, want its answer", got)
	}
	now := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/pid", `{}`).Result(t).Text()
	if now == old {
		t.Errorf("pid %s after the restart, want a new child", now)
	}
	p := d.Unix.Do(t, "POST", "/v1/servers/dmeo/restart", "").Problem(t)
	if p.Status != 404 || !strings.Contains(p.Detail, `did you mean "demo"?`) {
		t.Errorf("unknown server: %+v", p)
	}
}

// waitInFlight waits until n calls are in flight on d's instances.
func waitInFlight(t *testing.T, d *apitest.Daemon, n int) {
	t.Helper()
	testenv.WaitFor(t, fmt.Sprintf("%d calls in flight", n), func() bool { return d.InFlight() == n })
}

// TestRefresh: POST /v1/refresh drops the schema cache and lists the
// running children's tools again; ?server= names one, and an unknown one
// is a 404.
func TestRefresh(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global"}`, "other": `{"scope": "global"}`})
	d.Unix.Do(t, "GET", "/v1/servers/demo/tools", "").Decode(t, new(any))
	d.Unix.Do(t, "GET", "/v1/servers/other/tools", "").Decode(t, new(any))

	var res wire.Refreshed
	d.Unix.Do(t, "POST", "/v1/refresh?server=demo", "").Decode(t, &res)
	if res.Server != "demo" || res.Dropped != 1 || len(res.Listed) != 1 || !strings.HasPrefix(res.Listed[0], "demo-") {
		t.Errorf("refresh demo: %+v, want one entry dropped and demo's instance listed", res)
	}
	res = wire.Refreshed{}
	d.Unix.Do(t, "POST", "/v1/refresh", "").Decode(t, &res)
	if res.Server != "" || res.Dropped != 2 || len(res.Listed) != 2 {
		t.Errorf("refresh all: %+v, want both entries (listed again) dropped and both instances listed", res)
	}
	if p := d.Unix.Do(t, "POST", "/v1/refresh?server=nope", "").Problem(t); p.Status != 404 {
		t.Errorf("unknown server: %+v", p)
	}
}

// TestLifecycleRoutesNeedAdmin: a caller without admin rights may neither
// restart, refresh nor force a stop.
func TestLifecycleRoutesNeedAdmin(t *testing.T) {
	proctest.CheckNoLeaks(t)
	is, err := auth.Open(auth.Options{Dir: t.TempDir(), Hostname: "box"})
	if err != nil {
		t.Fatal(err)
	}
	var stops, forced atomic.Int32
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "global"}`}), Tokens: is,
		API: func(o *api.Options) {
			o.Daemon = &api.Daemon{Stop: func() { stops.Add(1) }, StopNow: func() { forced.Add(1) }}
		}})
	ci := bearerClient(d, apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "ci", Rule: rights.Rule{Servers: []string{"demo"}}, TTL: "1h"}).Token)
	for _, path := range []string{"/v1/servers/demo/restart", "/v1/refresh", "/v1/refresh?server=demo", "/v1/daemon/stop?force=true"} {
		if p := ci.Do(t, "POST", path, "").Problem(t); p.Status != 403 {
			t.Errorf("POST %s without admin: %+v, want 403", path, p)
		}
	}
	if p := d.Unix.Do(t, "POST", "/v1/daemon/stop?force=maybe", "").Problem(t); p.Status != 400 {
		t.Errorf("force=maybe: %+v, want 400", p)
	}
	if r := d.Unix.Do(t, "POST", "/v1/daemon/stop?force=true", ""); r.StatusCode != 204 || forced.Load() != 1 || stops.Load() != 0 {
		t.Errorf("forced stop: %d, %d forced, %d graceful; want 204, 1, 0", r.StatusCode, forced.Load(), stops.Load())
	}
}
