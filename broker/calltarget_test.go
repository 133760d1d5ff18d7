package broker_test

import (
	"encoding/json"
	"testing"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
)

// TestCallTarget: a call tells Request.OnTarget the daemon's context of
// it — server, tool, scope kind, key, the instance it ran on — and the
// config file that defines the server to the owner only.
func TestCallTarget(t *testing.T) {
	b := newDemoBroker(t, map[string]config.ScopeKind{"demo": config.ScopeSession})
	remote := broker.Caller{Name: "alice", Via: "tailnet", Rights: rights.All()} // not the daemon's owner
	for _, c := range []broker.Caller{local, remote} {
		var got []broker.CallTarget
		r := broker.Request{Caller: c, Server: "demo", Context: broker.CallContext{Session: "s1"}}
		r.OnTarget = func(t broker.CallTarget) { got = append(got, t) }
		if _, err := b.CallTool(t.Context(), r, "echo", json.RawMessage(`{"message":"x"}`), nil); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("%s: OnTarget told %d times, want once", c.Name, len(got))
		}
		var inst string
		for _, in := range b.Instances() {
			if in.Server == "demo" && in.Key == got[0].Key {
				inst = in.ID
			}
		}
		want := broker.CallTarget{Server: "demo", Tool: "echo", Scope: "session", Key: got[0].Key, Instance: inst}
		if c.Owner {
			want.Config = "test.json"
		}
		if got[0] != want || inst == "" || got[0].Key == "" {
			t.Errorf("%s: OnTarget told %+v, want %+v", c.Name, got[0], want)
		}
	}
}
