package api_test

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/wire"
)

var callID = regexp.MustCompile(`"call":"[0-9a-f]+"`)

// TestTokenToolPatterns: a token whose rule has tools sees only the tools
// its patterns match, on every route a tool is seen through (the server's
// and the aggregate listing, search, the catalog, both OpenAPI documents,
// the TypeScript client and types), and a call of another is the 404 of a
// tool that does not exist. An admin token with patterns mints only within
// them.
func TestTokenToolPatterns(t *testing.T) {
	proctest.CheckNoLeaks(t)
	is, err := auth.Open(auth.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, daemonOptions{cfg: demoConfig(t, map[string]string{"demo": `{"scope": "cwd"}`}), tokens: is})
	root, _ := filepath.EvalSymlinks(t.TempDir())
	cwd := cwdHeader(root)
	m := mint(t, d.unix, wire.TokenRequest{Subject: "ci", Rule: rights.Rule{Servers: []string{"demo"}, Roots: []string{root},
		Tools: []string{"demo.e*"}, Admin: true}})
	ci := bearerClient(d, m.Token)
	visible, hidden := "Returns the message.", "Returns the server process id." // echo's and pid's descriptions

	names := func(raws []json.RawMessage) []string {
		var out []string
		for _, raw := range raws {
			var tl struct{ Name string }
			json.Unmarshal(raw, &tl)
			out = append(out, tl.Name)
		}
		slices.Sort(out)
		return out
	}
	var st wire.ServerTools
	ci.do(t, "GET", "/v1/servers/demo/tools", "", cwd...).decode(t, &st)
	var raws []json.RawMessage
	json.Unmarshal(st.Tools, &raws)
	if got := names(raws); !slices.Equal(got, []string{"echo", "env"}) {
		t.Errorf("GET /v1/servers/demo/tools: %v, want echo and env", got)
	}
	var all wire.ToolList
	ci.do(t, "GET", "/v1/tools", "", cwd...).decode(t, &all)
	if got := names(all.Tools); !slices.Equal(got, []string{"echo", "env"}) {
		t.Errorf("GET /v1/tools: %v, want echo and env", got)
	}
	for q, want := range map[string][]string{"pid": nil, "echo": {"echo"}} {
		var found wire.ToolList
		ci.do(t, "GET", "/v1/tools?q="+q, "", cwd...).decode(t, &found)
		if got := names(found.Tools); !slices.Equal(got, want) {
			t.Errorf("GET /v1/tools?q=%s: %v, want %v", q, got, want)
		}
	}
	var c wire.Catalog
	ci.do(t, "GET", "/v1/catalog?budget=10000", "", cwd...).decode(t, &c)
	var sigs []string
	for _, s := range c.Signatures {
		sigs = append(sigs, s.Name)
	}
	slices.Sort(sigs)
	if len(c.Servers) != 1 || c.Servers[0].Tools != 2 || !slices.Equal(sigs, []string{"echo", "env"}) {
		t.Errorf("GET /v1/catalog: %+v, signatures of %v; want demo's echo and env", c.Servers, sigs)
	}
	for _, path := range []string{"/v1/servers/demo/openapi.json", "/v1/openapi.json", "/v1/clients/typescript", "/v1/types?server=demo"} {
		owner := d.unix.do(t, "GET", path, "", cwd...)
		r := ci.do(t, "GET", path, "", cwd...)
		if r.StatusCode != 200 || owner.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s (the owner's: %d)", path, r.StatusCode, r.body, owner.StatusCode)
		}
		if !strings.Contains(string(owner.body), hidden) {
			t.Fatalf("GET %s as the owner holds no pid: the test proves nothing", path)
		}
		if body := string(r.body); !strings.Contains(body, visible) || strings.Contains(body, hidden) {
			t.Errorf("GET %s with the token: echo %v, pid %v; want echo alone", path, strings.Contains(body, visible), strings.Contains(body, hidden))
		}
	}

	if got := ci.do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"hi"}`, cwd...).result(t).text(); got != "hi" {
		t.Errorf("echo: %q", got)
	}
	if r := d.unix.do(t, "POST", "/v1/servers/demo/tools/pid", `{}`, cwd...); r.StatusCode != 200 {
		t.Fatalf("pid as the owner: %d %s", r.StatusCode, r.body)
	}
	for _, accept := range []string{"application/json", wire.MediaEventStream} {
		hid := ci.do(t, "POST", "/v1/servers/demo/tools/pid", `{}`, append(cwd, "Accept", accept)...)
		none := ci.do(t, "POST", "/v1/servers/demo/tools/pidx", `{}`, append(cwd, "Accept", accept)...)
		status := 404
		if accept == wire.MediaEventStream {
			status = 200 // the stream's error event: the call's id aside, the same
			hid.body, none.body = callID.ReplaceAll(hid.body, nil), callID.ReplaceAll(none.body, nil)
		}
		if hid.StatusCode != status || none.StatusCode != status || !strings.Contains(string(hid.body), "not-found") ||
			strings.ReplaceAll(string(none.body), "pidx", "pid") != string(hid.body) {
			t.Errorf("Accept %s: a hidden tool answers %d %s; one that does not exist %d %s; want the same 404", accept, hid.StatusCode, hid.body, none.StatusCode, none.body)
		}
		if strings.Contains(string(hid.body), "demo.e") {
			t.Errorf("the refusal names the patterns: %s", hid.body)
		}
	}
	// The stream's answer does not depend on the scheduler: a call that
	// fails as soon as it is admitted is the stream's error every time,
	// never now and then a plain 404.
	for i := range 40 {
		r := ci.do(t, "POST", "/v1/servers/demo/tools/pidx", `{}`, append(cwd, "Accept", wire.MediaEventStream)...)
		if r.StatusCode != 200 || !strings.Contains(string(r.body), "event: error") {
			t.Fatalf("streamed call %d to a missing tool: %d %s; want the stream's error event", i, r.StatusCode, r.body)
		}
	}

	// Minting with patterns: within them, or refused naming the pattern.
	for body, want := range map[string]string{
		`{"sub":"a","servers":["demo"],"roots":[],"tools":["demo.echo"]}`: "",
		`{"sub":"b","servers":["demo"],"roots":[],"tools":["demo.env*"]}`: "",
		`{"sub":"c","servers":["demo"],"roots":[],"tools":["demo.pid"]}`:  "tools demo.pid: a token may grant only rights its minter has",
		`{"sub":"d","servers":["demo"],"roots":[],"tools":["demo.*"]}`:    "tools demo.*: ",
		`{"sub":"e","servers":["demo"],"roots":[]}`:                       "tools (all): ",
		`{"sub":"f","servers":["demo"],"roots":[],"tools":["demo.e?"]}`:   `tool pattern \"demo.e?\"`,
		`{"sub":"g","servers":["demo"],"roots":[],"tools":["*.echo"]}`:    `tools *.echo: `,
	} {
		r := ci.do(t, "POST", "/v1/tokens", body)
		switch {
		case want == "" && r.StatusCode != 200:
			t.Errorf("mint %s: %d %s, want minted", body, r.StatusCode, r.body)
		case want != "" && (r.StatusCode/100 != 4 || !strings.Contains(string(r.body), want)):
			t.Errorf("mint %s: %d %s, want a refusal saying %q", body, r.StatusCode, r.body, want)
		}
	}
	if r := d.unix.do(t, "POST", "/v1/tokens", `{"sub":"h","servers":["demo"],"tools":["demo"]}`); r.StatusCode != 400 || !strings.Contains(string(r.body), `tool pattern \"demo\"`) {
		t.Errorf("the owner minting a bad pattern: %d %s, want 400 naming it", r.StatusCode, r.body)
	}
	var w wire.Whoami
	ci.do(t, "GET", "/v1/whoami", "").decode(t, &w)
	if len(w.Caller.Rights) != 1 || !slices.Equal(w.Caller.Rights[0].Tools, []string{"demo.e*"}) {
		t.Errorf("whoami: %+v, want the token's tools", w.Caller.Rights)
	}
}
