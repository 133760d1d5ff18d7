package client

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// requestLog returns the methods a demo child logged (demo.EnvRequestLog).
func requestLog(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// TestEras: a child of the stateless era alone, one of the handshake era
// alone, and one of both (the SDK's default) all serve tools and the
// instance root; the probe decides the era, and a remembered era
// (Options.Era) skips it when it is the handshake, or recovers when it is
// no longer right.
func TestEras(t *testing.T) {
	const root = "/work/my project"
	wantRoots := `[{"uri":"file:///work/my%20project","name":"my project"}]`
	for _, tt := range []struct {
		name, childEra, hint string
		wantEra              string
		wantLog              []string // the first requests the child saw
	}{
		{"stateless only", "stateless", "", EraStateless, []string{"server/discover", "tools/call", "tools/call"}},
		{"handshake only", "handshake", "", EraHandshake, []string{"server/discover", "initialize", "notifications/initialized"}},
		{"both", "", "", EraStateless, []string{"server/discover", "tools/call", "tools/call"}},
		{"handshake remembered", "handshake", EraHandshake, EraHandshake, []string{"initialize", "notifications/initialized"}},
		{"stale handshake memory", "stateless", EraHandshake, EraStateless, []string{"initialize", "server/discover", "tools/call", "tools/call"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "requests")
			env := []string{demo.EnvRequestLog + "=" + logPath}
			if tt.childEra != "" {
				env = append(env, demo.EnvEra+"="+tt.childEra)
			}
			_, s := connectChild(t, Options{Root: root, Era: tt.hint, RootsWait: -1}, env...)
			if s.Era() != tt.wantEra {
				t.Errorf("Era = %q, want %q", s.Era(), tt.wantEra)
			}
			if tt.wantEra == EraStateless && s.ProtocolVersion() != jsonrpc.StatelessVersion {
				t.Errorf("ProtocolVersion = %q, want %q", s.ProtocolVersion(), jsonrpc.StatelessVersion)
			}
			// Callers see the same initialize result either way.
			var init struct {
				ServerInfo   struct{ Name string }
				Instructions string
			}
			if err := json.Unmarshal(s.InitializeResult(), &init); err != nil || init.ServerInfo.Name != "mcpx-demo" || init.Instructions == "" || s.Instructions() != init.Instructions {
				t.Errorf("InitializeResult = %s (%v), Instructions = %q", s.InitializeResult(), err, s.Instructions())
			}
			res, err := s.CallTool(t.Context(), "roots", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			json.Unmarshal([]byte(toolText(t, res)), &got)
			json.Unmarshal([]byte(wantRoots), &want)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("roots mismatch (-want +got):\n%s", d)
			}
			if err := s.Ping(t.Context()); err != nil {
				t.Errorf("Ping: %v", err)
			}
			tools, err := s.Tools(t.Context())
			if err != nil || !strings.Contains(string(tools), `"echo"`) {
				t.Errorf("Tools = %.200s, %v", tools, err)
			}
			// A stateless session opens subscriptions/listen (the demo
			// declares tools.listChanged) on a goroutine of its own: it
			// may come anywhere after the probe, so the order is checked
			// without it, and its presence apart.
			log := slices.DeleteFunc(requestLog(t, logPath), func(m string) bool { return m == "subscriptions/listen" })
			if len(log) < len(tt.wantLog) || !slices.Equal(log[:len(tt.wantLog)], tt.wantLog) {
				t.Errorf("the child saw %v, want it to begin %v", log, tt.wantLog)
			}
			if tt.wantEra == EraStateless {
				deadline := time.Now().Add(30 * time.Second)
				for !slices.Contains(requestLog(t, logPath), "subscriptions/listen") {
					if time.Now().After(deadline) {
						t.Fatalf("a stateless session opened no subscriptions/listen: %v", requestLog(t, logPath))
					}
					time.Sleep(10 * time.Millisecond)
				}
			} else if slices.Contains(requestLog(t, logPath), "subscriptions/listen") {
				t.Errorf("a handshake-era session sent subscriptions/listen")
			}
			if n := s.InFlight(); n != 0 {
				t.Errorf("InFlight = %d with only the listen request pending, want 0", n)
			}
			if tt.wantEra == EraStateless && slices.Contains(log, "ping") {
				t.Errorf("a stateless child was sent ping (removed in 2026-07-28): %v", log)
			}
		})
	}
}

// TestStatelessMetaGolden: the probe and every later request of a stateless
// session carry the _meta protocol keys, beside the caller's own _meta.
func TestStatelessMetaGolden(t *testing.T) {
	p := newPeer(t)
	ch := make(chan *Session, 1)
	go func() {
		s, err := Connect(t.Context(), p.tr, Options{ClientName: "mcpx-test", ClientVersion: "1.2", Root: "/src/app"})
		if err != nil {
			t.Error(err)
		}
		ch <- s
	}()
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"mcpx-test","version":"1.2"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"roots":{},"elicitation":{"form":{},"url":{}}}}`
	p.expect(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta + `}}`)
	p.send(`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"instructions":"hi",` +
		`"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"peer","version":"9"}}}}`)
	s := <-ch
	if s == nil {
		t.FailNow()
	}
	defer s.Close()
	want := `{"protocolVersion":"2026-07-28","capabilities":{"tools":{}},"serverInfo":{"name":"peer","version":"9"},"instructions":"hi"}`
	if got := string(s.InitializeResult()); got != want {
		t.Errorf("InitializeResult = %s, want %s", got, want)
	}
	res := goCall(t.Context(), s, "tools/call", `{"name":"x","_meta":{"trace":"t1"}}`, nil)
	p.expect(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x",` + strings.TrimSuffix(meta, "}") + `,"trace":"t1"}` + `}}`)
	// The child needs the roots: it asks with input_required, and the
	// request is sent again with the answer and the state it gave.
	p.send(`{"jsonrpc":"2.0","id":2,"result":{"resultType":"input_required","inputRequests":{"r":{"method":"roots/list","params":{}}},"requestState":"s1"}}`)
	p.expect(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"requestState":"s1","inputResponses":{"r":{"roots":[{"uri":"file:///src/app","name":"app"}]}},"name":"x",` +
		strings.TrimSuffix(meta, "}") + `,"trace":"t1"}` + `}}`)
	p.send(`{"jsonrpc":"2.0","id":3,"result":{"content":[],"resultType":"complete"}}`)
	if r := <-res; r.err != nil || string(r.res) != `{"content":[],"resultType":"complete"}` {
		t.Errorf("tools/call = %s, %v", r.res, r.err)
	}
}

// TestProbeFallsBack: a child that refuses server/discover, or answers it
// without 2026-07-28, is initialized on the same process. (One silent to
// it is not: TestProbeUnanswered.)
func TestProbeFallsBack(t *testing.T) {
	for _, tt := range []struct {
		name   string
		answer string // to the probe
	}{
		{"refused", `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`},
		{"unsupported version", `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"unsupported","data":{"supported":["2025-11-25"],"requested":"2026-07-28"}}}`},
		{"older versions only", `{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2025-11-25"],"capabilities":{}}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newPeer(t)
			ch := make(chan *Session, 1)
			go func() {
				// The peer answers the probe: the wait is a bound, long
				// enough for a loaded machine (50 ms was not, in CI).
				s, err := Connect(t.Context(), p.tr, Options{ProbeWait: time.Minute})
				if err != nil {
					t.Error(err)
				}
				ch <- s
			}()
			if m := p.recvMsg(); m["method"] != "server/discover" {
				t.Fatalf("first message %v, want server/discover", m)
			}
			p.send(tt.answer)
			if m := p.recvMsg(); m["method"] != "initialize" {
				t.Fatalf("second message %v, want initialize", m)
			}
			p.send(`{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"peer","version":"1"}}}`)
			p.expect(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			s := <-ch
			if s == nil {
				t.FailNow()
			}
			defer s.Close()
			if s.Era() != EraHandshake || s.ProtocolVersion() != "2025-11-25" {
				t.Errorf("Era, ProtocolVersion = %q, %q", s.Era(), s.ProtocolVersion())
			}
			// A handshake session's requests carry no protocol _meta.
			res := goCall(t.Context(), s, "tools/list", `{}`, nil)
			p.expect(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}`)
			p.send(`{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}`)
			if r := <-res; r.err != nil {
				t.Error(r.err)
			}
		})
	}
}

// TestProbeUnanswered: a child that has not answered server/discover when
// the probe's wait ends is not sent initialize: it may be a dual-era server
// that is merely slow, which would answer the probe late and then refuse
// initialize, or serve two eras in one process. Connect fails with
// ErrProbeUnanswered, and the next thing the child sees is the end of its
// stdin.
func TestProbeUnanswered(t *testing.T) {
	p := newPeer(t)
	errc := make(chan error, 1)
	go func() {
		s, err := Connect(t.Context(), p.tr, Options{ProbeWait: 50 * time.Millisecond})
		if s != nil {
			s.Close()
		}
		errc <- err
	}()
	if m := p.recvMsg(); m["method"] != "server/discover" {
		t.Fatalf("first message %v, want server/discover", m)
	}
	if line, err := p.in.ReadString('\n'); err != io.EOF || line != "" {
		t.Fatalf("after the unanswered probe the child read %q, %v; want the end of its stdin alone", line, err)
	}
	err := <-errc
	if !errors.Is(err, ErrProbeUnanswered) {
		t.Fatalf("Connect = %v, want ErrProbeUnanswered", err)
	}
	if !strings.Contains(err.Error(), "server/discover") {
		t.Errorf("Connect = %v, want it to name server/discover", err)
	}
}

// TestStatelessInputRounds: a child that keeps asking is cut off after
// maxRounds; one asking for sampling fails the call with a clear error.
func TestStatelessInputRounds(t *testing.T) {
	p := newPeer(t)
	s := p.connectStateless()
	res := goCall(t.Context(), s, "tools/call", `{"name":"x"}`, nil)
	for range maxRounds + 1 { // the request, then maxRounds retries
		m := p.recvMsg()
		p.send(`{"jsonrpc":"2.0","id":` + jsonNumber(m["id"]) + `,"result":{"resultType":"input_required","inputRequests":{"r":{"method":"roots/list"}}}}`)
	}
	if r := <-res; r.err == nil || !strings.Contains(r.err.Error(), "gives up") {
		t.Errorf("endless input rounds: %s, %v", r.res, r.err)
	}
	res = goCall(t.Context(), s, "tools/call", `{"name":"y"}`, nil)
	m := p.recvMsg()
	p.send(`{"jsonrpc":"2.0","id":` + jsonNumber(m["id"]) + `,"result":{"resultType":"input_required","inputRequests":{"s":{"method":"sampling/createMessage","params":{}}}}}`)
	if r := <-res; r.err == nil || !strings.Contains(r.err.Error(), "sampling/createMessage") {
		t.Errorf("sampling input: %s, %v", r.res, r.err)
	}
}

func jsonNumber(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// connectStateless runs Connect against the peer as a stateless child.
func (p *peer) connectStateless() *Session {
	p.t.Helper()
	ch := make(chan *Session, 1)
	go func() {
		s, err := Connect(p.t.Context(), p.tr, Options{})
		if err != nil {
			p.t.Error(err)
		}
		ch <- s
	}()
	if m := p.recvMsg(); m["method"] != "server/discover" {
		p.t.Fatalf("first message %v, want server/discover", m)
	}
	p.send(`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"capabilities":{}}}`)
	s := <-ch
	if s == nil {
		p.t.FailNow()
	}
	p.t.Cleanup(func() { s.Close() })
	return s
}
