package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/internal/sse"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/wire"
)

func routePath(t *testing.T, op string, params ...string) string {
	t.Helper()
	rt, ok := wire.Lookup(op)
	if !ok {
		t.Fatalf("no route %s", op)
	}
	return rt.Path(params...)
}

func TestLeasesOverHTTP(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "pid"}`})
	for _, body := range []string{`{"tll":"5s"}`, `{"ttl":"2h"}`, `{"ttl":"soon"}`, `[]`} {
		if p := d.Unix.Do(t, "POST", "/v1/leases", body).Problem(t); p.Status != 400 {
			t.Errorf("lease request %s: %+v, want 400", body, p)
		}
	}
	var l wire.Lease
	d.Unix.Do(t, "POST", "/v1/leases", `{"ttl":"30s"}`).Decode(t, &l)
	if l.ID == "" || l.TTL != "30s" || l.Key != "lease:"+l.ID {
		t.Fatalf("lease %+v", l)
	}
	d.Unix.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"x"}`, wire.HeaderLease, l.ID).Result(t)
	var s wire.Session
	d.Unix.Do(t, "GET", routePath(t, wire.OpGetSession, l.Key), "").Decode(t, &s)
	if s.Scope != "lease" || len(s.Instances) != 1 || s.Instances[0].Pid == 0 || s.Creator.Via != wire.ViaUnix || s.Created.IsZero() {
		t.Errorf("lease session %+v", s)
	}
	var renewed wire.Lease
	d.Unix.Do(t, "POST", routePath(t, wire.OpRenewLease, l.ID), "").Decode(t, &renewed)
	if renewed.TTL != "30s" || renewed.Expires.Before(l.Expires) {
		t.Errorf("renewed %+v, from %+v", renewed, l)
	}
	if r := d.Unix.Do(t, "DELETE", routePath(t, wire.OpReleaseLease, l.ID), ""); r.StatusCode != 204 {
		t.Fatalf("release: %d %s", r.StatusCode, r.Bytes)
	}
	var list wire.SessionList
	d.Unix.Do(t, "GET", "/v1/sessions", "").Decode(t, &list)
	if len(list.Sessions) != 0 {
		t.Errorf("sessions after the release: %+v", list.Sessions)
	}
	p := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"x"}`, wire.HeaderLease, l.ID).Problem(t)
	if p.Status != 400 || p.Field != wire.HeaderLease {
		t.Errorf("call under a released lease: %+v", p)
	}
	if p := d.Unix.Do(t, "DELETE", routePath(t, wire.OpReleaseLease, l.ID), "").Problem(t); p.Status != 404 {
		t.Errorf("releasing again: %+v", p)
	}
}

func TestSessionsOverHTTPWithOddKeys(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"s": `{"scope": "session"}`})
	id := "a b/c%2F?#+..&x=1"
	d.Unix.Do(t, "POST", "/v1/servers/s/tools/echo", `{"message":"x"}`, wire.HeaderSession, id).Result(t)
	key := "session:" + id
	path := routePath(t, wire.OpGetSession, key)
	var s wire.Session
	d.Unix.Do(t, "GET", path, "").Decode(t, &s)
	if s.Key != key || s.Calls != 1 {
		t.Fatalf("session %+v, want key %q", s, key)
	}
	for _, body := range []string{`{"idleTimeout":"forever"}`, `{"nmae":"x"}`} {
		if p := d.Unix.Do(t, "PATCH", path, body).Problem(t); p.Status != 400 {
			t.Errorf("PATCH %s: %+v, want 400", body, p)
		}
	}
	d.Unix.Do(t, "PATCH", path, `{"name":"kept","idleTimeout":"1h"}`).Decode(t, &s)
	if s.Name != "kept" || s.IdleTimeout != "1h0m0s" {
		t.Errorf("patched %+v", s)
	}
	if r := d.Unix.Do(t, "DELETE", path, ""); r.StatusCode != 204 {
		t.Fatalf("stop: %d %s", r.StatusCode, r.Bytes)
	}
	if p := d.Unix.Do(t, "GET", path, "").Problem(t); p.Status != 404 {
		t.Errorf("stopped session: %+v", p)
	}
}

func TestScopeOverrideOverHTTP(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{
		"open":  `{"scope": "global", "scopePolicy": {"allow": ["global", "session"], "allowOverride": true}}`,
		"fixed": `{"scope": "global"}`,
	})
	d.Unix.Do(t, "POST", "/v1/servers/open/tools/echo", `{"message":"x"}`, wire.HeaderScope, "session", wire.HeaderSession, "s1").Result(t)
	var list wire.SessionList
	d.Unix.Do(t, "GET", "/v1/sessions", "").Decode(t, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].Key != "session:s1" {
		t.Errorf("sessions %+v, want the override's session:s1", list.Sessions)
	}
	for server, field := range map[string]string{"open": "scopePolicy.allow", "fixed": "scopePolicy.allowOverride"} {
		p := d.Unix.Do(t, "POST", "/v1/servers/"+server+"/tools/echo", `{"message":"x"}`, wire.HeaderScope, "call").Problem(t)
		if p.Status != 403 || p.Server != server || p.Field != field {
			t.Errorf("%s: denied override %+v, want 403 naming %s", server, p, field)
		}
	}
}

// TestSessionsByNameOverHTTP: a session's name stands for its key on
// GET, PATCH and DELETE /v1/sessions/{key} and in ?session= of
// /v1/events and /v1/calls, whose session feed its creator may follow
// without admin rights.
func TestSessionsByNameOverHTTP(t *testing.T) {
	proctest.CheckNoLeaks(t)
	is, err := auth.Open(auth.Options{Dir: t.TempDir(), Hostname: "box"})
	if err != nil {
		t.Fatal(err)
	}
	d := apitest.Start(t, apitest.Options{Tokens: is, Config: apitest.DemoConfig(t, map[string]string{"s": `{"scope": "session"}`})})
	viewer := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "viewer", Rule: rights.Rule{Servers: []string{"s"}}, TTL: "1h"})
	as := []string{"Authorization", "Bearer " + viewer.Token}
	call := func(session string) {
		d.TCP.Do(t, "POST", "/v1/servers/s/tools/echo", `{"message":"x"}`, append([]string{wire.HeaderSession, session}, as...)...).Result(t)
	}
	call("b1")
	call("b2")
	var list wire.SessionList
	d.TCP.Do(t, "GET", "/v1/sessions", "", as...).Decode(t, &list)
	if len(list.Sessions) != 2 {
		t.Fatalf("viewer's sessions %+v", list.Sessions)
	}
	key := list.Sessions[0].Key // b1's, sorted first
	var s wire.Session
	d.TCP.Do(t, "PATCH", routePath(t, wire.OpSetSession, key), `{"name":"mybrowser"}`, as...).Decode(t, &s)
	d.TCP.Do(t, "GET", routePath(t, wire.OpGetSession, "mybrowser"), "", as...).Decode(t, &s)
	if s.Key != key || s.Name != "mybrowser" {
		t.Fatalf("by name: %+v, want %s", s, key)
	}
	d.TCP.Do(t, "PATCH", routePath(t, wire.OpSetSession, "mybrowser"), `{"idleTimeout":"30m"}`, as...).Decode(t, &s)
	if s.Key != key || s.IdleTimeout != "30m0s" {
		t.Errorf("patched by name: %+v", s)
	}
	if p := d.TCP.Do(t, "GET", routePath(t, wire.OpGetSession, "nosuch"), "", as...).Problem(t); p.Status != 404 || p.Field != "key" {
		t.Errorf("an unknown name: %+v, want 404 naming key", p)
	}
	if p := d.TCP.Do(t, "GET", "/v1/calls", "", as...).Problem(t); p.Status != 403 {
		t.Errorf("every call, for a caller without admin: %+v, want 403", p)
	}

	// The session's calls, by its name, as its creator: b2's are not in it.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", d.TCP.Base+"/v1/calls?"+wire.QuerySession+"=mybrowser", nil)
	req.Header.Set("Accept", wire.MediaEventStream)
	req.Header.Set(as[0], as[1])
	resp, err := d.TCP.HTTP.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /v1/calls?session=mybrowser: %v %v", resp, err)
	}
	defer resp.Body.Close()
	// The stream is open once its headers are in, its reader added before.
	call("b2")
	call("b1")
	dec := sse.NewDecoder(bufio.NewReader(resp.Body), 1<<20)
	for {
		ev, err := dec.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Event != wire.EventCall {
			continue
		}
		var c wire.CallFinished
		json.Unmarshal(ev.Data, &c) //nolint:errcheck // checked below
		if c.Key != key || c.Server != "s" || c.Tool != "echo" || c.Outcome != "ok" {
			t.Errorf("the session's feed sent %+v, want b1's echo on %s", c, key)
		}
		break
	}
	cancel()
	io.Copy(io.Discard, resp.Body) //nolint:errcheck // the stream ends with ctx

	// Its events, by its name: b1's spawn, not b2's.
	r := d.TCP.Do(t, "GET", "/v1/events?follow=false&"+wire.QuerySession+"=mybrowser", "", as...)
	var kinds []string
	apitest.ReadEvents(t, bytes.NewReader(r.Bytes), func(ev apitest.Event) {
		var e wire.LifecycleEvent
		json.Unmarshal([]byte(ev.Data), &e) //nolint:errcheck // checked below
		if e.Key != key {
			t.Errorf("session events sent %+v, want %s's only", e, key)
		}
		kinds = append(kinds, e.Kind)
	})
	if !slices.Contains(kinds, wire.EventSpawn) {
		t.Errorf("session events %v, want its spawn", kinds)
	}

	if r := d.TCP.Do(t, "DELETE", routePath(t, wire.OpStopSession, "mybrowser"), "", as...); r.StatusCode != 204 {
		t.Fatalf("stop by name: %d %s", r.StatusCode, r.Bytes)
	}
	if p := d.TCP.Do(t, "GET", routePath(t, wire.OpGetSession, key), "", as...).Problem(t); p.Status != 404 {
		t.Errorf("stopped by name, the session is %+v", p)
	}
}
