package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/internal/sse"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/wire"
)

// TestDashboardActionsNeedCSRFAndRights: each action the dashboard offers
// (stop an instance, restart a server, reload the config, revoke a token,
// approve a server's tools) is an API request that a browser session makes
// only with its CSRF secret and the caller's rights: without the secret,
// as a cross-site form post, or signed in with a token lacking admin, it is
// refused and nothing changes; with both it works.
func TestDashboardActionsNeedCSRFAndRights(t *testing.T) {
	proctest.CheckNoLeaks(t)
	is, err := auth.Open(auth.Options{Dir: t.TempDir(), Hostname: "box"})
	if err != nil {
		t.Fatal(err)
	}
	var reloads atomic.Int32
	d := apitest.Start(t, apitest.Options{Tokens: is, Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "global", "pinTools": true}`}),
		API: func(o *api.Options) {
			o.Daemon = &api.Daemon{Reload: func(context.Context) (wire.Reloaded, error) {
				reloads.Add(1)
				return wire.Reloaded{Config: "/etc/mcpx.json", Servers: 1}, nil
			}}
		}})
	if r := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"hi"}`); r.StatusCode != 200 {
		t.Fatalf("echo: %d %s", r.StatusCode, r.Bytes)
	}
	var list wire.InstanceList
	d.Unix.Do(t, "GET", "/v1/instances", "").Decode(t, &list)
	if len(list.Instances) != 1 {
		t.Fatalf("instances = %+v", list.Instances)
	}
	inst := list.Instances[0].ID
	doomed := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "doomed", TTL: "1h"})
	viewer := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "viewer", Rule: rights.Rule{Servers: []string{"demo"}}, TTL: "1h"})

	b := browser(d)
	cookie, csrf := signIn(t, b, apitest.Token)
	vcookie, vcsrf := signIn(t, b, viewer.Token)
	actions := []struct{ name, method, path, body string }{
		{"approve", "POST", "/v1/servers/demo/pins/approve", `{}`},
		{"stop", "DELETE", "/v1/instances/" + inst, ""},
		{"restart", "POST", "/v1/servers/demo/restart", ""},
		{"reload", "POST", "/v1/daemon/reload", ""},
		{"revoke", "DELETE", "/v1/tokens/" + doomed.Info.ID, ""},
	}
	json := []string{"Content-Type", "application/json", wire.HeaderClient, "mcpx-dashboard"}
	for _, a := range actions {
		if r := b.Do(t, a.method, a.path, a.body, append(json, "Cookie", cookie)...); r.StatusCode != 403 || r.Problem(t).Field != wire.HeaderCSRF {
			t.Errorf("%s without the CSRF secret: %d %s, want 403 naming %s", a.name, r.StatusCode, r.Bytes, wire.HeaderCSRF)
		}
		// What a page elsewhere can send: a form post, with the cookie
		// (were it not SameSite=Strict), and no header of its own.
		if r := b.Do(t, "POST", a.path, "x=1", "Content-Type", "application/x-www-form-urlencoded", "Cookie", cookie,
			"Origin", "http://evil.example"); r.StatusCode != 403 {
			t.Errorf("%s as a cross-site form post: %d %s, want 403", a.name, r.StatusCode, r.Bytes)
		}
		if r := b.Do(t, a.method, a.path, a.body, append(json, "Cookie", vcookie, wire.HeaderCSRF, vcsrf)...); r.StatusCode != 403 {
			t.Errorf("%s by a session without admin: %d %s, want 403", a.name, r.StatusCode, r.Bytes)
		}
	}
	d.Unix.Do(t, "GET", "/v1/instances", "").Decode(t, &list)
	if len(list.Instances) != 1 || list.Instances[0].ID != inst || list.Instances[0].State != "ready" || reloads.Load() != 0 {
		t.Fatalf("after refused actions: instances %+v, %d reloads; want the one instance ready, no reload", list.Instances, reloads.Load())
	}
	if _, err := is.Verify(doomed.Token); err != nil {
		t.Fatalf("the token was revoked by a refused action: %v", err)
	}

	for _, a := range actions {
		if r := b.Do(t, a.method, a.path, a.body, append(json, "Cookie", cookie, wire.HeaderCSRF, csrf)...); r.StatusCode/100 != 2 {
			t.Errorf("%s by the owner's session: %d %s", a.name, r.StatusCode, r.Bytes)
		}
	}
	d.Unix.Do(t, "GET", "/v1/instances", "").Decode(t, &list)
	for _, i := range list.Instances {
		if i.ID == inst && i.State != "stopped" {
			t.Errorf("the stopped instance is %s", i.State)
		}
	}
	if reloads.Load() != 1 {
		t.Errorf("%d reloads, want 1", reloads.Load())
	}
	if _, err := is.Verify(doomed.Token); err == nil {
		t.Error("the revoked token still verifies")
	}
}

// TestCallFeed: GET /v1/calls streams each call as it finishes, from any
// listener, with its server, tool, caller, duration and outcome; it is an
// admin's only.
func TestCallFeed(t *testing.T) {
	proctest.CheckNoLeaks(t)
	is, err := auth.Open(auth.Options{Dir: t.TempDir(), Hostname: "box"})
	if err != nil {
		t.Fatal(err)
	}
	d := apitest.Start(t, apitest.Options{Tokens: is, Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "global"}`})})
	viewer := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "viewer", Rule: rights.Rule{Servers: []string{"demo"}}, TTL: "1h"})
	if r := d.TCP.Do(t, "GET", "/v1/calls", "", "Authorization", "Bearer "+viewer.Token); r.StatusCode != 403 {
		t.Errorf("the feed for a caller without admin: %d %s, want 403", r.StatusCode, r.Bytes)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", d.TCP.Base+"/v1/calls", nil)
	req.Header.Set("Accept", wire.MediaEventStream) // else the answer is compressed, held back until enough is written
	resp, err := d.TCP.HTTP.Do(req)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != wire.MediaEventStream {
		t.Fatalf("GET /v1/calls: %v %v", resp, err)
	}
	defer resp.Body.Close()
	// The stream is open once its headers are in; the observer is added
	// before them, so these calls are seen.
	d.Unix.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"hi"}`)
	d.Unix.Do(t, "POST", "/v1/servers/demo/tools/fail", `{"message":"no"}`)
	d.Unix.Do(t, "POST", "/v1/servers/nope/tools/x", `{}`)
	dec := sse.NewDecoder(bufio.NewReader(resp.Body), 1<<20)
	var got []wire.CallFinished
	for len(got) < 3 {
		ev, err := dec.Next()
		if err != nil {
			t.Fatalf("after %d calls: %v", len(got), err)
		}
		if ev.Event != wire.EventCall {
			continue
		}
		var c wire.CallFinished
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			t.Fatal(err)
		}
		got = append(got, c)
	}
	want := []struct{ server, tool, outcome string }{{"demo", "echo", "ok"}, {"demo", "fail", "isError"}, {"", "", "error"}}
	for i, w := range want {
		c := got[i]
		if c.Server != w.server || c.Tool != w.tool || c.Outcome != w.outcome || !strings.HasPrefix(c.Caller, "local:") ||
			c.Via != wire.ViaUnix || c.DurationMs <= 0 || c.Time.IsZero() {
			t.Errorf("call %d = %+v, want %s.%s %s by the local caller", i, c, w.server, w.tool, w.outcome)
		}
	}
	cancel()
	io.Copy(io.Discard, resp.Body) //nolint:errcheck // the stream ends with ctx
}

// TestCallStatsSeries: ?step= splits each row of /v1/stats into buckets
// from ?since= on, the total too; a step without since, too short, or
// making too many buckets is a 400 naming step.
func TestCallStatsSeries(t *testing.T) {
	proctest.CheckNoLeaks(t)
	d := apitest.Start(t, apitest.Options{StateDir: t.TempDir(), Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "global"}`})})
	for range 3 {
		d.Unix.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"hi"}`)
	}
	var st wire.CallStats
	r := d.Unix.Do(t, "GET", "/v1/stats?by=tool&since=1h&step=1m", "")
	if r.StatusCode != 200 {
		t.Fatalf("stats: %d %s", r.StatusCode, r.Bytes)
	}
	r.Decode(t, &st)
	if st.StepMs != 60000 || len(st.Rows) != 1 || st.Rows[0].Key != "demo.echo" {
		t.Fatalf("stats = %s", r.Bytes)
	}
	sum := 0
	for i, b := range st.Rows[0].Series {
		sum += b.Count
		if want := st.Since.Add(time.Duration(i) * time.Minute); !b.Start.Equal(want) {
			t.Errorf("bucket %d starts %v, want %v", i, b.Start, want)
		}
	}
	if n := len(st.Rows[0].Series); sum != 3 || n < 60 || n > 61 || st.Rows[0].Series[n-1].Count == 0 || len(st.Total.Series) != n {
		t.Errorf("series %+v (total %d), want an hour of minutes ending with the calls", st.Rows[0].Series, len(st.Total.Series))
	}
	for _, q := range []string{"step=1m", "since=1h&step=10ms", "since=1h&step=1x", "since=1000h&step=1s"} {
		r := d.Unix.Do(t, "GET", "/v1/stats?"+q, "")
		if r.StatusCode != 400 || r.Problem(t).Field != wire.QueryStep {
			t.Errorf("stats?%s: %d %s, want 400 naming step", q, r.StatusCode, r.Bytes)
		} else if q == "step=1m" && !strings.Contains(r.Problem(t).Detail, "needs since") {
			t.Errorf("stats?%s: %s, want the problem to say a step needs since", q, r.Bytes)
		}
	}
}
