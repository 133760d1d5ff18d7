package tsnet_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// TestGrantToolPatterns: a grant element's tools reach the caller's
// rights: the listing shows only the tools they match, a call of another
// is the 404 of a tool that does not exist, and a grant with a pattern
// that is not one is refused, naming it.
func TestGrantToolPatterns(t *testing.T) {
	proctest.CheckNoLeaks(t)
	tn := newTailnet(t)
	brokerNode(t, tn, nil)
	laptop := newPeer(t, tn.node(t, "laptop", nil))
	granted := canonical(t, t.TempDir())
	tn.control.SetGlobalAppCaps(grant(`{"servers": ["demo"], "roots": ["` + granted + `"], "tools": ["demo.cwd", "demo.e*"]}`))
	testenv.WaitFor(t, "the grant to reach the broker", func() bool {
		code, _ := laptop.do(t, "GET", "/v1/whoami", "")
		return code == 200
	})
	if got := laptop.whoami(t).Caller.Rights; len(got) != 1 || !slices.Equal(got[0].Tools, []string{"demo.cwd", "demo.e*"}) {
		t.Errorf("whoami rights = %s, want the element's tools", got)
	}
	code, body := laptop.do(t, "GET", "/v1/servers/demo/tools", "", wire.HeaderCwd, granted)
	var st wire.ServerTools
	if err := json.Unmarshal(body, &st); code != 200 || err != nil {
		t.Fatalf("tools: %d %s", code, body)
	}
	var tools []struct{ Name string }
	json.Unmarshal(st.Tools, &tools)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"cwd", "echo", "env"}) {
		t.Errorf("tools listed: %v, want cwd, echo, env", names)
	}
	if code, cwd := laptop.callCwd(t, granted); code != 200 || cwd != granted {
		t.Errorf("cwd: %d %s", code, cwd)
	}
	hidCode, hid := laptop.do(t, "POST", "/v1/servers/demo/tools/pid", "{}", wire.HeaderCwd, granted)
	noneCode, none := laptop.do(t, "POST", "/v1/servers/demo/tools/pidx", "{}", wire.HeaderCwd, granted)
	if hidCode != 404 || noneCode != 404 || strings.ReplaceAll(string(none), "pidx", "pid") != string(hid) {
		t.Errorf("a tool the grant hides: %d %s; one that does not exist: %d %s; want the same 404", hidCode, hid, noneCode, none)
	}

	tn.control.SetGlobalAppCaps(grant(`{"servers": ["demo"], "roots": ["` + granted + `"], "tools": ["demo.e?"]}`))
	testenv.WaitFor(t, "the bad grant to reach the broker", func() bool {
		code, _ := laptop.do(t, "GET", "/v1/whoami", "")
		return code != 200
	})
	code, body = laptop.do(t, "GET", "/v1/whoami", "")
	if code != 403 || !strings.Contains(string(body), `tool pattern \"demo.e?\"`) {
		t.Errorf("a grant with a bad pattern: %d %s, want 403 naming it", code, body)
	}
}
