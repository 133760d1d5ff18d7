package client_test

// The client against the real API: a real broker with demo children (this
// test binary re-exec'd), served on a real unix socket and loopback TCP.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/pool/proc/sandbox"
	"mcpx.dev/mcpx/wire"
)

func TestMain(m *testing.M) {
	sandbox.MaybeExec() // in a confined child's helper: confine, exec, never return
	demo.MaybeServe()   // in a child: serve the demo server on stdio and exit
	maybeHelperDaemon()
	os.Exit(m.Run())
}

// daemon is a daemon of package apitest (the API and the MCP endpoint over
// a real broker, on a unix socket and loopback TCP) with this package's
// client over each listener.
type daemon struct {
	*apitest.Daemon
	unix, tcp *client.Client
	url       string // the loopback listener's, which takes apitest.Token
}

// startDaemon serves demo servers by name; each value is a JSON object of
// more config fields for that server, or "".
func startDaemon(t testing.TB, servers map[string]string) *daemon {
	t.Helper()
	d := &daemon{Daemon: apitest.StartDemo(t, servers)}
	d.url = "http://" + d.TCPAddr
	d.unix = client.New(d.Sock, client.Options{})
	d.tcp = client.New(d.url+"/", client.Options{Token: apitest.Token})
	return d
}

func (d *daemon) both() []*client.Client { return []*client.Client{d.unix, d.tcp} }

// text is the text content of a CallToolResult, and its isError.
func text(t *testing.T, res json.RawMessage) (string, bool) {
	t.Helper()
	var r struct {
		Content []struct{ Text string }
		IsError bool
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatalf("result %s: %v", res, err)
	}
	var s []string
	for _, c := range r.Content {
		s = append(s, c.Text)
	}
	return strings.Join(s, "\n"), r.IsError
}

func asProblem(t *testing.T, err error) *wire.Problem {
	t.Helper()
	var p *wire.Problem
	if !errors.As(err, &p) {
		t.Fatalf("error %v (%T), want a *wire.Problem", err, err)
	}
	return p
}

func TestCallTool(t *testing.T) {
	d := startDaemon(t, map[string]string{"demo": ""})
	cl := client.Caller{Cwd: t.TempDir()}
	for _, c := range d.both() {
		res, err := c.CallTool(t.Context(), cl, "demo", "echo", json.RawMessage(`{"message":"hello"}`), nil)
		if got, isErr := text(t, res); err != nil || got != "hello" || isErr {
			t.Errorf("%s: echo = %s, %v", c.Addr(), res, err)
		}
		// No arguments: no body, which is {}.
		res, err = c.CallTool(t.Context(), cl, "demo", "pid", nil, nil)
		if got, _ := text(t, res); err != nil || got == "" {
			t.Errorf("%s: pid = %s, %v", c.Addr(), res, err)
		}
		// A tool that ran and failed is a result, not an error.
		res, err = c.CallTool(t.Context(), cl, "demo", "fail", json.RawMessage(`{"message":"nope"}`), nil)
		if got, isErr := text(t, res); err != nil || got != "nope" || !isErr {
			t.Errorf("%s: fail = %s, %v", c.Addr(), res, err)
		}
	}
}

func TestCallToolStreamsProgress(t *testing.T) {
	d := startDemo1(t)
	for _, c := range d.both() {
		var progress []wire.Progress
		res, err := c.CallTool(t.Context(), client.Caller{Cwd: t.TempDir()}, "demo", "progress", json.RawMessage(`{"steps":3}`),
			func(p json.RawMessage) {
				var pr wire.Progress
				if err := json.Unmarshal(p, &pr); err != nil || pr.ProgressToken == nil {
					t.Errorf("progress %s: %v", p, err)
				}
				progress = append(progress, pr)
			})
		if got, _ := text(t, res); err != nil || got != "done 3" {
			t.Errorf("%s: result %s, %v", c.Addr(), res, err)
		}
		if len(progress) != 3 || !(progress[0].Progress < progress[1].Progress && progress[1].Progress < progress[2].Progress) {
			t.Errorf("%s: progress %+v, want 3 increasing", c.Addr(), progress)
		}
	}
}

func startDemo1(t *testing.T) *daemon { return startDaemon(t, map[string]string{"demo": ""}) }

func TestProblems(t *testing.T) {
	d := startDemo1(t)
	cl := client.Caller{Cwd: t.TempDir()}
	progress := func(json.RawMessage) {}
	for _, stream := range []func(json.RawMessage){nil, progress} {
		name := fmt.Sprintf("stream=%v", stream != nil)
		// Unknown server: a plain 404 before any stream.
		_, err := d.unix.CallTool(t.Context(), cl, "nope", "echo", nil, stream)
		if p := asProblem(t, err); p.Status != 404 || p.Kind() != wire.KindNotFound || p.Server != "nope" {
			t.Errorf("%s: unknown server: %+v", name, p)
		}
		// Unknown tool: found by the child; an error event when streamed.
		_, err = d.unix.CallTool(t.Context(), cl, "demo", "nope", nil, stream)
		if p := asProblem(t, err); p.Status != 404 || !strings.Contains(p.Detail, `no tool "nope"`) {
			t.Errorf("%s: unknown tool: %+v", name, p)
		}
		// A relative cwd: the caller's mistake.
		_, err = d.unix.CallTool(t.Context(), client.Caller{Cwd: "relative"}, "demo", "echo", nil, stream)
		if p := asProblem(t, err); p.Status != 400 || p.Field != wire.HeaderCwd {
			t.Errorf("%s: relative cwd: %+v", name, p)
		}
	}
	// A crash: the daemon's owner sees the child's stderr, over the socket and
	// over TCP with the token.
	_, err := d.unix.CallTool(t.Context(), cl, "demo", "crash", json.RawMessage(`{"stderr":"dying words"}`), nil)
	if p := asProblem(t, err); p.Status != 502 || !strings.Contains(p.StderrTail, "dying words") {
		t.Errorf("unix crash: %+v", p)
	}
	_, err = d.tcp.CallTool(t.Context(), cl, "demo", "crash", json.RawMessage(`{"stderr":"dying words"}`), nil)
	if p := asProblem(t, err); p.Status != 502 || !strings.Contains(p.StderrTail, "dying words") {
		t.Errorf("tcp crash: %+v", p)
	}
}

func TestWhoami(t *testing.T) {
	d := startDaemon(t, nil)
	// The pid must be the caller's or an ancestor's: the test's parent is.
	cl := client.Caller{Cwd: "/src/app", Session: "s1", ParentSession: "p1", Lease: "l1", Pid: os.Getppid()}
	w, raw, err := d.unix.Whoami(t.Context(), cl)
	if err != nil {
		t.Fatal(err)
	}
	want := wire.DeclaredCtx{Cwd: "/src/app", Session: "s1", ParentSession: "p1", Lease: "l1", Pid: os.Getppid()}
	if w.Context != want || w.Caller.Via != wire.ViaUnix || !w.Caller.Local || w.Version != "test" {
		t.Errorf("unix whoami %+v", w)
	}
	if !json.Valid(raw) || !strings.Contains(string(raw), `"session":"s1"`) {
		t.Errorf("raw answer %s", raw)
	}
	w, _, err = d.tcp.Whoami(t.Context(), cl)
	want.Pid = 0
	if err != nil || w.Context != want || w.Caller.Via != wire.ViaTCPLoopback {
		t.Errorf("tcp whoami %+v, %v", w, err)
	}
	if h, _, err := d.tcp.Healthz(t.Context()); err != nil || h.Status != "ok" || h.Version != "test" {
		t.Errorf("healthz %+v, %v", h, err)
	}
}

// The client sends Mcpx-Pid over the unix socket only, and zero fields not
// at all.
func TestCallerHeaders(t *testing.T) {
	var mu sync.Mutex
	var seen []http.Header
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		w.Header().Set("Content-Type", wire.MediaJSON)
		w.Write([]byte(`{}`))
	})
	ts := httptest.NewServer(h)
	defer ts.Close()
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	defer srv.Close()

	cl := client.Caller{Cwd: "/a", Session: "s", Pid: 7}
	for _, c := range []*client.Client{client.New(sock, client.Options{}), client.New(ts.URL, client.Options{})} {
		if _, _, err := c.Whoami(t.Context(), cl); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != 2 {
		t.Fatalf("%d requests", len(seen))
	}
	for i, wantPid := range []string{"7", ""} {
		h := seen[i]
		if h.Get(wire.HeaderCwd) != "/a" || h.Get(wire.HeaderSession) != "s" || h.Get(wire.HeaderPid) != wantPid {
			t.Errorf("request %d: headers %v, want pid %q", i, h, wantPid)
		}
		if _, ok := h[wire.HeaderParentSession]; ok {
			t.Errorf("request %d: empty parent session sent", i)
		}
	}
}

func TestListsAndStop(t *testing.T) {
	d := startDaemon(t, map[string]string{
		"demo":   `{"scope": "global", "description": "the demo"}`,
		"broken": fmt.Sprintf(`{"scope": "global", "env": {%q: "3"}}`, demo.EnvExitAtStart),
	})
	ctx, c, cl := t.Context(), d.unix, client.Caller{Cwd: t.TempDir()}

	servers, _, err := c.Servers(ctx)
	if err != nil || len(servers.Servers) != 2 {
		t.Fatalf("servers %+v, %v", servers, err)
	}
	one, _, err := c.Server(ctx, "demo")
	if err != nil || one.Description != "the demo" || one.Scope != "global" {
		t.Errorf("server %+v, %v", one, err)
	}
	if _, _, err := c.Server(ctx, "nope"); asProblem(t, err).Status != 404 {
		t.Errorf("unknown server: %v", err)
	}

	st, raw, err := c.ServerTools(ctx, cl, "demo")
	if err != nil || st.Server != "demo" || !strings.Contains(string(st.Tools), `"echo"`) || !strings.Contains(string(raw), `"server":"demo"`) {
		t.Errorf("server tools %+v, %v", st, err)
	}
	all, _, err := c.Tools(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range all.Tools {
		var v struct{ Server string }
		if json.Unmarshal(tool, &v); v.Server != "demo" {
			t.Errorf("tool %s not tagged demo", tool)
		}
	}
	if len(all.Errors) != 1 || all.Errors[0].Server != "broken" || all.Errors[0].Status != 502 {
		t.Errorf("errors %+v, want one for broken", all.Errors)
	}

	res, _, err := c.Resources(ctx, cl, "demo")
	if err != nil || res.Server != "demo" || !strings.Contains(string(res.Resources), "demo://readme") {
		t.Errorf("resources %+v, %v", res, err)
	}
	if r, err := c.ReadResource(ctx, cl, "demo", "demo://readme"); err != nil || !strings.Contains(string(r), `"contents"`) {
		t.Errorf("read resource %s, %v", r, err)
	}
	pr, _, err := c.Prompts(ctx, cl, "demo")
	if err != nil || !strings.Contains(string(pr.Prompts), "greet") {
		t.Errorf("prompts %+v, %v", pr, err)
	}
	if r, err := c.GetPrompt(ctx, cl, "demo", "greet", map[string]string{"name": "Ada"}); err != nil || !strings.Contains(string(r), "Ada") {
		t.Errorf("get prompt %s, %v", r, err)
	}

	list, raw, err := c.Instances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var in *wire.Instance
	for i := range list.Instances {
		if list.Instances[i].Server == "demo" {
			in = &list.Instances[i]
		}
	}
	if in == nil || in.State != "ready" || in.Pid == 0 || !strings.Contains(string(raw), in.ID) {
		t.Fatalf("instances %+v; raw %s", list, raw)
	}
	if err := c.StopInstance(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.StopInstance(ctx, in.ID); asProblem(t, err).Status != 404 {
		t.Errorf("stopping again: %v", err)
	}
}

func TestUnreachable(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	_, err := client.New(sock, client.Options{}).CallTool(t.Context(), client.Caller{}, "demo", "echo", nil, nil)
	var u *client.UnreachableError
	if !errors.As(err, &u) || !u.Unix || u.Addr != sock || !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("error %v (%T), want an UnreachableError for %s", err, err, sock)
	}
	if want := "cannot reach the broker at " + sock + ": connect: no such file or directory"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	url := "http://" + ln.Addr().String()
	ln.Close()
	_, _, err = client.New("unix://"+sock, client.Options{}).Instances(t.Context())
	if !errors.As(err, &u) || u.Addr != sock {
		t.Errorf("unix:// address: %v", err)
	}
	_, _, err = client.New(url, client.Options{}).Instances(t.Context())
	if !errors.As(err, &u) || u.Unix || u.Addr != url {
		t.Errorf("TCP: %v, want an UnreachableError for %s", err, url)
	}
}

// Whatever answers that is not a problem document (a proxy's error page)
// becomes a problem with the status.
func TestErrorPageIsAProblem(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream is down", http.StatusBadGateway)
	}))
	defer ts.Close()
	_, _, err := client.New(ts.URL, client.Options{}).Servers(t.Context())
	p := asProblem(t, err)
	if want := (wire.Problem{Status: 502, Title: "Bad Gateway", Detail: "502 Bad Gateway: upstream is down"}); *p != want {
		t.Errorf("problem %+v, want %+v", *p, want)
	}
}

func TestBrokenStreams(t *testing.T) {
	tests := []struct{ name, stream, want string }{
		{"no result", "event: progress\ndata: {}\n\n: keep-alive\n\n", "the broker ended the stream without a result"},
		{"bad error event", "event: error\ndata: {nope\n\n", "undecodable error event: {nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", wire.MediaEventStream)
				w.Write([]byte(tt.stream))
			}))
			defer ts.Close()
			n := 0
			_, err := client.New(ts.URL, client.Options{}).CallTool(t.Context(), client.Caller{}, "a", "b", nil, func(json.RawMessage) { n++ })
			if err == nil || err.Error() != tt.want {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestDialOption(t *testing.T) {
	d := startDaemon(t, nil)
	var dials atomic.Int32
	var got []string
	var mu sync.Mutex
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		mu.Lock()
		got = append(got, network+" "+addr)
		mu.Unlock()
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	for _, addr := range []string{d.Sock, d.url} {
		c := client.New(addr, client.Options{Dial: dial, Token: apitest.Token})
		for range 3 {
			if _, _, err := c.Healthz(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if dials.Load() != 2 {
		t.Errorf("%d dials, want one per client (connections are kept alive)", dials.Load())
	}
	if want := "unix " + d.Sock; got[0] != want || !strings.HasPrefix(got[1], "tcp 127.0.0.1:") {
		t.Errorf("dialled %q, want %q then tcp", got, want)
	}
}
