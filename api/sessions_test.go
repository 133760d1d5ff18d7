package api_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/apitest"
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
