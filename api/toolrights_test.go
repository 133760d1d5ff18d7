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
	"mcpx.dev/mcpx/internal/testing/apitest"
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
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "cwd"}`}), Tokens: is})
	root, _ := filepath.EvalSymlinks(t.TempDir())
	cwd := cwdHeader(root)
	m := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "ci", Rule: rights.Rule{Servers: []string{"demo"}, Roots: []string{root},
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
	ci.Do(t, "GET", "/v1/servers/demo/tools", "", cwd...).Decode(t, &st)
	var raws []json.RawMessage
	json.Unmarshal(st.Tools, &raws)
	if got := names(raws); !slices.Equal(got, []string{"echo", "env"}) {
		t.Errorf("GET /v1/servers/demo/tools: %v, want echo and env", got)
	}
	var all wire.ToolList
	ci.Do(t, "GET", "/v1/tools", "", cwd...).Decode(t, &all)
	if got := names(all.Tools); !slices.Equal(got, []string{"echo", "env"}) {
		t.Errorf("GET /v1/tools: %v, want echo and env", got)
	}
	for q, want := range map[string][]string{"pid": nil, "echo": {"echo"}} {
		var found wire.ToolList
		ci.Do(t, "GET", "/v1/tools?q="+q, "", cwd...).Decode(t, &found)
		if got := names(found.Tools); !slices.Equal(got, want) {
			t.Errorf("GET /v1/tools?q=%s: %v, want %v", q, got, want)
		}
	}
	var c wire.Catalog
	ci.Do(t, "GET", "/v1/catalog?budget=10000", "", cwd...).Decode(t, &c)
	var sigs []string
	for _, s := range c.Signatures {
		sigs = append(sigs, s.Name)
	}
	slices.Sort(sigs)
	if len(c.Servers) != 1 || c.Servers[0].Tools != 2 || !slices.Equal(sigs, []string{"echo", "env"}) {
		t.Errorf("GET /v1/catalog: %+v, signatures of %v; want demo's echo and env", c.Servers, sigs)
	}
	for _, path := range []string{"/v1/servers/demo/openapi.json", "/v1/openapi.json", "/v1/clients/typescript", "/v1/types?server=demo"} {
		owner := d.Unix.Do(t, "GET", path, "", cwd...)
		r := ci.Do(t, "GET", path, "", cwd...)
		if r.StatusCode != 200 || owner.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s (the owner's: %d)", path, r.StatusCode, r.Bytes, owner.StatusCode)
		}
		if !strings.Contains(string(owner.Bytes), hidden) {
			t.Fatalf("GET %s as the owner holds no pid: the test proves nothing", path)
		}
		if body := string(r.Bytes); !strings.Contains(body, visible) || strings.Contains(body, hidden) {
			t.Errorf("GET %s with the token: echo %v, pid %v; want echo alone", path, strings.Contains(body, visible), strings.Contains(body, hidden))
		}
	}

	if got := ci.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"hi"}`, cwd...).Result(t).Text(); got != "hi" {
		t.Errorf("echo: %q", got)
	}
	if r := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/pid", `{}`, cwd...); r.StatusCode != 200 {
		t.Fatalf("pid as the owner: %d %s", r.StatusCode, r.Bytes)
	}
	for _, accept := range []string{"application/json", wire.MediaEventStream} {
		hid := ci.Do(t, "POST", "/v1/servers/demo/tools/pid", `{}`, append(cwd, "Accept", accept)...)
		none := ci.Do(t, "POST", "/v1/servers/demo/tools/pidx", `{}`, append(cwd, "Accept", accept)...)
		status := 404
		if accept == wire.MediaEventStream {
			status = 200 // the stream's error event: the call's id aside, the same
			hid.Bytes, none.Bytes = callID.ReplaceAll(hid.Bytes, nil), callID.ReplaceAll(none.Bytes, nil)
		}
		if hid.StatusCode != status || none.StatusCode != status || !strings.Contains(string(hid.Bytes), "not-found") ||
			strings.ReplaceAll(string(none.Bytes), "pidx", "pid") != string(hid.Bytes) {
			t.Errorf("Accept %s: a hidden tool answers %d %s; one that does not exist %d %s; want the same 404", accept, hid.StatusCode, hid.Bytes, none.StatusCode, none.Bytes)
		}
		if strings.Contains(string(hid.Bytes), "demo.e") {
			t.Errorf("the refusal names the patterns: %s", hid.Bytes)
		}
	}
	// The stream's answer does not depend on the scheduler: a call that
	// fails as soon as it is admitted is the stream's error every time,
	// never now and then a plain 404.
	for i := range 40 {
		r := ci.Do(t, "POST", "/v1/servers/demo/tools/pidx", `{}`, append(cwd, "Accept", wire.MediaEventStream)...)
		if r.StatusCode != 200 || !strings.Contains(string(r.Bytes), "event: error") {
			t.Fatalf("streamed call %d to a missing tool: %d %s; want the stream's error event", i, r.StatusCode, r.Bytes)
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
		r := ci.Do(t, "POST", "/v1/tokens", body)
		switch {
		case want == "" && r.StatusCode != 200:
			t.Errorf("mint %s: %d %s, want minted", body, r.StatusCode, r.Bytes)
		case want != "" && (r.StatusCode/100 != 4 || !strings.Contains(string(r.Bytes), want)):
			t.Errorf("mint %s: %d %s, want a refusal saying %q", body, r.StatusCode, r.Bytes, want)
		}
	}
	if r := d.Unix.Do(t, "POST", "/v1/tokens", `{"sub":"h","servers":["demo"],"tools":["demo"]}`); r.StatusCode != 400 || !strings.Contains(string(r.Bytes), `tool pattern \"demo\"`) {
		t.Errorf("the owner minting a bad pattern: %d %s, want 400 naming it", r.StatusCode, r.Bytes)
	}
	var w wire.Whoami
	ci.Do(t, "GET", "/v1/whoami", "").Decode(t, &w)
	if len(w.Caller.Rights) != 1 || !slices.Equal(w.Caller.Rights[0].Tools, []string{"demo.e*"}) {
		t.Errorf("whoami: %+v, want the token's tools", w.Caller.Rights)
	}
}
