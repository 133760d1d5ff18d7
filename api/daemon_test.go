package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/wire"
)

// Every TCP request needs the daemon's bearer token: none or a wrong one is
// a 401 problem that says what to send and names no path or token; the
// unix socket needs none.
func TestTCPNeedsToken(t *testing.T) {
	d := apitest.Start(t, apitest.Options{})
	noToken := &apitest.Client{Base: d.TCP.Base, HTTP: &http.Client{}}
	for _, tt := range []struct{ name, auth string }{
		{"none", ""},
		{"wrong", "Bearer " + apitest.Token + "x"},
		{"prefix", "Bearer " + apitest.Token[:5]},
		{"basic", "Basic " + apitest.Token},
		{"empty bearer", "Bearer "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hdr := []string{wire.HeaderClient, "api-test"}
			if tt.auth != "" {
				hdr = append(hdr, "Authorization", tt.auth)
			}
			for _, path := range []string{"/v1/whoami", "/v1/instances"} {
				r := noToken.Do(t, "GET", path, "", hdr...)
				p := r.Problem(t)
				if p.Status != 401 || p.Kind() != wire.KindUnauthorized || p.Title != "Unauthorized" {
					t.Errorf("%s: problem %+v", path, p)
				}
				if !strings.Contains(p.Detail, "Authorization: Bearer") && !strings.Contains(p.Detail, "daemon record") {
					t.Errorf("%s: detail %q has no hint", path, p.Detail)
				}
				if strings.Contains(p.Detail, "/") && !strings.Contains(p.Detail, "Authorization") || strings.Contains(p.Detail, apitest.Token[:5]) {
					t.Errorf("%s: detail %q leaks", path, p.Detail)
				}
				if got := r.Header.Get("WWW-Authenticate"); got != `Mcpx realm="mcpx"` { // not Bearer: faces.go
					t.Errorf("%s: WWW-Authenticate %q", path, got)
				}
			}
		})
	}
	if r := d.TCP.Do(t, "GET", "/v1/whoami", ""); r.StatusCode != 200 {
		t.Errorf("with the token: %d %s", r.StatusCode, r.Bytes)
	}
	if r := d.Unix.Do(t, "GET", "/v1/whoami", ""); r.StatusCode != 200 {
		t.Errorf("unix socket without a token: %d %s", r.StatusCode, r.Bytes)
	}
}

// A handler with no token admits no TCP caller at all.
func TestNoTokenNoTCP(t *testing.T) {
	b, err := broker.New(broker.Options{Config: &config.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(context.Background()) })
	h := api.New(api.Options{Broker: b})
	for _, auth := range []string{"", "Bearer ", "Bearer x"} {
		r := httptest.NewRequest("GET", "/v1/whoami", nil)
		r.RemoteAddr, r.Host = "127.0.0.1:5555", "127.0.0.1:7777"
		r.Header.Set(wire.HeaderClient, "api-test")
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 401 {
			t.Errorf("Authorization %q: %d, want 401", auth, w.Code)
		}
	}
}

func TestDaemonControl(t *testing.T) {
	var stops, reloads atomic.Int32
	started := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	info := wire.DaemonInfo{Pid: 42, Version: "v1", Socket: "/run/x.sock", Address: "127.0.0.1:1",
		Config: "/etc/c.json", State: "/var/s", Started: started}
	fail := false
	daemon := &api.Daemon{
		Info: info,
		Stop: func() { stops.Add(1) },
		Reload: func(context.Context) (wire.Reloaded, error) {
			reloads.Add(1)
			if fail {
				return wire.Reloaded{}, &broker.Error{Kind: broker.KindConfig, Op: "reload",
					Msg: "the config has 1 problem; the running config stays in force", Private: `/etc/c.json: server "a": unknown field "comand"`}
			}
			return wire.Reloaded{Config: "/etc/c.json", Servers: 3}, nil
		},
	}
	d := apitest.Start(t, apitest.Options{API: func(o *api.Options) { o.Daemon = daemon }})
	for _, c := range []*apitest.Client{d.Unix, d.TCP} {
		var w wire.Whoami
		c.Do(t, "GET", "/v1/whoami", "").Decode(t, &w)
		if w.Daemon == nil || !cmp.Equal(*w.Daemon, info) {
			t.Errorf("whoami daemon %+v, want %+v", w.Daemon, info)
		}
	}

	var res wire.Reloaded
	d.Unix.Do(t, "POST", "/v1/daemon/reload", "").Decode(t, &res)
	if res != (wire.Reloaded{Config: "/etc/c.json", Servers: 3}) {
		t.Errorf("reload answered %+v", res)
	}
	fail = true
	p := d.Unix.Do(t, "POST", "/v1/daemon/reload", "").Problem(t)
	if p.Kind() != wire.KindConfig || !strings.Contains(p.Detail, `unknown field "comand"`) {
		t.Errorf("refused reload to the owner: %+v", p)
	}
	if p.Status != 422 { // real-use 16: the user's config, not a daemon fault
		t.Errorf("refused reload: status %d, want 422", p.Status)
	}
	p = d.TCP.Do(t, "POST", "/v1/daemon/reload", "").Problem(t)
	if p.Kind() != wire.KindConfig || !strings.Contains(p.Detail, `unknown field "comand"`) {
		t.Errorf("refused reload over TCP, to the owner (the token is the owner's): %+v", p)
	}
	if r := d.Unix.Do(t, "GET", "/v1/daemon/reload", ""); r.StatusCode != 405 {
		t.Errorf("GET reload: %d", r.StatusCode)
	}

	if r := d.Unix.Do(t, "POST", "/v1/daemon/stop", ""); r.StatusCode != 204 {
		t.Errorf("stop: %d %s", r.StatusCode, r.Bytes)
	}
	if stops.Load() != 1 || reloads.Load() != 3 {
		t.Errorf("%d stops, %d reloads; want 1 and 3", stops.Load(), reloads.Load())
	}
}

// Without a Daemon, the control routes say so and whoami has no daemon.
func TestNoDaemonControl(t *testing.T) {
	d := apitest.Start(t, apitest.Options{})
	var w wire.Whoami
	d.Unix.Do(t, "GET", "/v1/whoami", "").Decode(t, &w)
	if w.Daemon != nil {
		t.Errorf("whoami daemon %+v", w.Daemon)
	}
	for _, path := range []string{"/v1/daemon/stop", "/v1/daemon/reload"} {
		if p := d.Unix.Do(t, "POST", path, "").Problem(t); p.Status != 503 {
			t.Errorf("%s: %+v", path, p)
		}
	}
}
