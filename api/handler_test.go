package api_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/wire"
)

func TestProblemMapping(t *testing.T) {
	local := broker.Caller{Via: "unix", Local: true, Owner: true, Rights: rights.Rights{{}}}
	remote := broker.Caller{Name: "alice", Via: "tailnet", Rights: rights.Rights{{}}} // not the daemon's owner
	tests := []struct {
		name       string
		err        error
		caller     broker.Caller
		want       wire.Problem
		retryAfter string
	}{
		{"bad request", &broker.Error{Kind: broker.KindBadRequest, Field: "Mcpx-Cwd", Msg: "cwd is not absolute", Hint: "send an absolute path"}, remote,
			wire.Problem{Type: wire.ProblemTypeBase + "bad-request", Title: "Bad request", Status: 400, Detail: "cwd is not absolute; send an absolute path", Field: "Mcpx-Cwd"}, ""},
		{"not found", &broker.Error{Kind: broker.KindNotFound, Server: "nope", Msg: `no server "nope"`}, remote,
			wire.Problem{Type: wire.ProblemTypeBase + "not-found", Title: "Not found", Status: 404, Detail: `no server "nope"`, Server: "nope"}, ""},
		{"forbidden", &broker.Error{Kind: broker.KindForbidden, Msg: "no"}, remote,
			wire.Problem{Type: wire.ProblemTypeBase + "forbidden", Title: "Forbidden", Status: 403, Detail: "no"}, ""},
		{"child failed, local caller sees stderr", &broker.Error{Kind: broker.KindChildFailed, Server: "demo", Msg: "the server exited", StderrTail: "panic: at /home/me/x.go:3", Err: errors.New("exit status 2")}, local,
			wire.Problem{Type: wire.ProblemTypeBase + "child-failed", Title: "Server failed", Status: 502, Detail: "the server exited", Server: "demo", StderrTail: "panic: at /home/me/x.go:3"}, ""},
		{"child failed, remote caller does not", &broker.Error{Kind: broker.KindChildFailed, Server: "demo", Msg: "the server exited", StderrTail: "secret", RPCCode: -32603}, remote,
			wire.Problem{Type: wire.ProblemTypeBase + "child-failed", Title: "Server failed", Status: 502, Detail: "the server exited", Server: "demo", RPCCode: -32603}, ""},
		{"timeout", &broker.Error{Kind: broker.KindTimeout, Msg: "call timed out after 5m0s"}, remote,
			wire.Problem{Type: wire.ProblemTypeBase + "timeout", Title: "Timed out", Status: 504, Detail: "call timed out after 5m0s"}, ""},
		{"exhausted rounds up", &broker.Error{Kind: broker.KindExhausted, Msg: "pool full", RetryAfter: 1500 * time.Millisecond}, remote,
			wire.Problem{Type: wire.ProblemTypeBase + "exhausted", Title: "Pool exhausted", Status: 503, Detail: "pool full", RetryAfter: 2}, "2"},
		{"exhausted at least a second", &broker.Error{Kind: broker.KindExhausted, Msg: "pool full"}, remote,
			wire.Problem{Type: wire.ProblemTypeBase + "exhausted", Title: "Pool exhausted", Status: 503, Detail: "pool full", RetryAfter: 1}, "1"},
		{"unavailable", &broker.Error{Kind: broker.KindUnavailable, Msg: "shutting down"}, remote,
			wire.Problem{Type: wire.ProblemTypeBase + "unavailable", Title: "Unavailable", Status: 503, Detail: "shutting down"}, ""},
		{"internal hides everything", &broker.Error{Kind: broker.KindInternal, Msg: "at /src/x.go", Field: "f", StderrTail: "t", Err: errors.New("/etc/secret")}, local,
			wire.Problem{Type: wire.ProblemTypeBase + "internal", Title: "Internal error", Status: 500, Detail: "internal error"}, ""},
		{"plain error is internal", errors.New("open /root/.ssh/id: denied"), local,
			wire.Problem{Type: wire.ProblemTypeBase + "internal", Title: "Internal error", Status: 500, Detail: "internal error"}, ""},
		{"wrapped broker error", fmt.Errorf("calling: %w", &broker.Error{Kind: broker.KindNotFound, Msg: "no tool"}), remote,
			wire.Problem{Type: wire.ProblemTypeBase + "not-found", Title: "Not found", Status: 404, Detail: "no tool"}, ""},
		{"too large", &http.MaxBytesError{Limit: 10}, remote,
			wire.Problem{Type: wire.ProblemTypeBase + "too-large", Title: "Request body too large", Status: 413, Detail: "request body is larger than 10 bytes; send smaller arguments", Field: "body"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			api.WriteProblem(w, httptest.NewRequest("GET", "/v1/x", nil), tt.caller, tt.err)
			if w.Code != tt.want.Status {
				t.Errorf("status %d, want %d", w.Code, tt.want.Status)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type %q", ct)
			}
			if got := w.Header().Get("Retry-After"); got != tt.retryAfter {
				t.Errorf("Retry-After %q, want %q", got, tt.retryAfter)
			}
			var got wire.Problem
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problem (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHealthz(t *testing.T) {
	d := apitest.Start(t, apitest.Options{})
	for _, c := range []*apitest.Client{d.Unix, d.TCP} {
		r := c.Do(t, "GET", "/healthz", "")
		if r.StatusCode != 200 || !strings.Contains(string(r.Bytes), `"status":"ok"`) {
			t.Errorf("healthz: %d %s", r.StatusCode, r.Bytes)
		}
	}
}

func TestWhoami(t *testing.T) {
	d := apitest.Start(t, apitest.Options{})
	hdr := []string{wire.HeaderCwd, "/src/app", wire.HeaderSession, "s1", wire.HeaderParentSession, "p1",
		wire.HeaderLease, "l1", wire.HeaderPid, strconv.Itoa(os.Getppid())}

	var unix wire.Whoami
	d.Unix.Do(t, "GET", "/v1/whoami", "", hdr...).Decode(t, &unix)
	uid := os.Getuid()
	want := wire.Whoami{
		Caller:  wire.Caller{Name: fmt.Sprintf("local:%d", uid), Via: "unix", Uid: uid, Local: true, Owner: true, Admin: true, Rights: rights.All()},
		Context: wire.DeclaredCtx{Cwd: "/src/app", Session: "s1", ParentSession: "p1", Lease: "l1", Pid: os.Getppid()},
		Version: "test",
	}
	if diff := cmp.Diff(want, unix); diff != "" {
		t.Errorf("unix whoami (-want +got):\n%s", diff)
	}

	var tcp wire.Whoami
	d.TCP.Do(t, "GET", "/v1/whoami", "", hdr...).Decode(t, &tcp)
	want.Caller = wire.Caller{Name: "loopback", Via: "tcp-loopback", Owner: true, Admin: true, Rights: rights.All()}
	want.Context.Pid = 0 // a pid from a TCP caller names nothing we can trust
	if diff := cmp.Diff(want, tcp); diff != "" {
		t.Errorf("tcp whoami (-want +got):\n%s", diff)
	}
}

func TestBadPidHeader(t *testing.T) {
	d := apitest.Start(t, apitest.Options{})
	p := d.Unix.Do(t, "GET", "/v1/whoami", "", wire.HeaderPid, "abc").Problem(t)
	if p.Status != 400 || p.Field != wire.HeaderPid {
		t.Errorf("problem %+v", p)
	}
}

func TestPeerUidMustBeOwner(t *testing.T) {
	other := os.Getuid() + 1
	d := apitest.Start(t, apitest.Options{Handler: func(o api.Options) http.Handler { return api.NewForOwner(o, other) }})
	r := d.Unix.Do(t, "GET", "/v1/servers", "")
	p := r.Problem(t)
	if p.Status != 403 || p.Type != wire.ProblemTypeBase+"forbidden" || !strings.Contains(p.Detail, fmt.Sprint(os.Getuid())) {
		t.Errorf("problem %+v", p)
	}
	// Loopback TCP does not depend on the uid.
	if r := d.TCP.Do(t, "GET", "/v1/servers", ""); r.StatusCode != 200 {
		t.Errorf("tcp: %d %s", r.StatusCode, r.Bytes)
	}
}

func TestRefusesNonLocalAndBrowsers(t *testing.T) {
	b, err := broker.New(broker.Options{Config: &config.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(t.Context()) })
	h := api.New(api.Options{Broker: b, Token: "secret"})
	tests := []struct {
		name, remote, host, origin string
		want                       int
	}{
		{"loopback", "127.0.0.1:5555", "127.0.0.1:7777", "", 200},
		{"loopback v6", "[::1]:5555", "localhost:7777", "", 200},
		{"remote address", "192.0.2.7:5555", "127.0.0.1:7777", "", 403},
		{"no address", "", "127.0.0.1:7777", "", 403},
		{"browser origin", "127.0.0.1:5555", "127.0.0.1:7777", "https://evil.example", 403},
		{"dns rebinding", "127.0.0.1:5555", "evil.example:7777", "", 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/servers", nil)
			r.RemoteAddr, r.Host = tt.remote, tt.host
			r.Header.Set("X-Forwarded-For", "127.0.0.1") // never trusted
			r.Header.Set("Authorization", "Bearer secret")
			r.Header.Set(wire.HeaderClient, "api-test")
			if tt.origin != "" {
				r.Header.Set("Origin", tt.origin)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Errorf("status %d, want %d: %s", w.Code, tt.want, w.Body)
			}
		})
	}
}

func TestBodyErrors(t *testing.T) {
	d := apitest.Start(t, apitest.Options{API: func(o *api.Options) { o.MaxBodyBytes = 64 }})
	tests := []struct {
		name, path, body string
		status           int
		detail           string
	}{
		{"malformed", "/v1/servers/demo/tools/echo", `{"message": "hi",}`, 400, "byte offset 18"},
		{"truncated", "/v1/servers/demo/tools/echo", `{"message": `, 400, "byte offset"},
		{"trailing garbage", "/v1/servers/demo/tools/echo", `{} x`, 400, "byte offset 4"},
		{"array", "/v1/servers/demo/tools/echo", `[1, 2]`, 400, "must be a JSON object, not an array"},
		{"string", "/v1/servers/demo/tools/echo", `"hi"`, 400, "not a string"},
		{"null", "/v1/servers/demo/tools/echo", `null`, 400, "not null"},
		{"too large", "/v1/servers/demo/tools/echo", `{"message": "` + strings.Repeat("x", 100) + `"}`, 413, "larger than 64 bytes"},
		{"prompt argument not a string", "/v1/servers/demo/prompts/greet", `{"name": 3}`, 400, `prompt argument "name" must be a string`},
		{"prompt arguments an array", "/v1/servers/demo/prompts/greet", `["x"]`, 400, "not an array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range []*apitest.Client{d.Unix, d.TCP} {
				p := c.Do(t, "POST", tt.path, tt.body, "Content-Type", "application/json").Problem(t)
				if p.Status != tt.status || !strings.Contains(p.Detail, tt.detail) {
					t.Errorf("got %d %q, want %d containing %q", p.Status, p.Detail, tt.status, tt.detail)
				}
				if tt.status == 400 && p.Field != "body" {
					t.Errorf("field %q, want body", p.Field)
				}
			}
		})
	}
}

func TestUnknownRoute(t *testing.T) {
	d := apitest.Start(t, apitest.Options{})
	if p := d.Unix.Do(t, "GET", "/v1/nope", "").Problem(t); p.Status != 404 {
		t.Errorf("unknown path: %+v", p)
	}
	if p := d.Unix.Do(t, "PUT", "/v1/servers", "").Problem(t); p.Status != 405 {
		t.Errorf("wrong method: %+v", p)
	}
}

func TestReadResourceNeedsURI(t *testing.T) {
	d := apitest.Start(t, apitest.Options{})
	p := d.Unix.Do(t, "GET", "/v1/servers/demo/resources/read", "").Problem(t)
	if p.Status != 400 || p.Field != "uri" {
		t.Errorf("problem %+v", p)
	}
}

func TestPanicIsAProblemAndServingGoesOn(t *testing.T) {
	d := apitest.Start(t, apitest.Options{Handler: api.NewPanicking})
	p := d.Unix.Do(t, "GET", "/panic", "").Problem(t)
	if p.Status != 500 || p.Detail != "internal error" {
		t.Errorf("problem %+v", p)
	}
	if !strings.Contains(d.Logs.String(), "panic serving request") {
		t.Errorf("panic not logged:\n%s", d.Logs)
	}
	if r := d.Unix.Do(t, "GET", "/healthz", ""); r.StatusCode != 200 {
		t.Errorf("after panic: %d", r.StatusCode)
	}
}
