package broker_test

import (
	"slices"
	"testing"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/pool/confine"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// TestEffectiveSandbox is the rule of who is confined, and to what, case
// by case (docs/sandbox.md).
func TestEffectiveSandbox(t *testing.T) {
	parse := func(doc string) *config.Config {
		t.Helper()
		cfg, err := config.Parse([]byte(doc), "t.json")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	owner := broker.Caller{Name: "local:1", Via: "unix", Local: true, Owner: true, Rights: rights.All()}
	grant := broker.Caller{Name: "alice", Via: "tailnet", Rights: rights.Rights{{Servers: []string{"fs"}, Roots: []string{"/src/a"}}}}
	token := broker.Caller{Name: "ci", Via: "jwt", Rights: rights.Rights{{Servers: []string{"*"}}}} // no roots named: anywhere
	const root = "/src/a/wt"
	for _, c := range []struct {
		name   string
		doc    string
		caller broker.Caller
		root   string
		check  func(t *testing.T, s *confine.Spec)
	}{
		{"owner, nothing said: unconfined", `{"servers": {"fs": {"command": "fs"}}}`, owner, root, func(t *testing.T, s *confine.Spec) {
			if s != nil {
				t.Errorf("confined: %+v", s)
			}
		}},
		{"owner, sandbox true", `{"servers": {"fs": {"command": "fs", "sandbox": true}}}`, owner, root, func(t *testing.T, s *confine.Spec) {
			want(t, s, confine.WhyConfig, sandbox.Enforce, sandbox.NetworkNone)
			if !slices.Equal(s.Write, []string{root}) {
				t.Errorf("write %v, want the root alone", s.Write)
			}
			if s.Limits != confine.DefaultLimits {
				t.Errorf("limits %+v, want the defaults %+v", s.Limits, confine.DefaultLimits)
			}
		}},
		{"owner opts out of confining defaults", `{"defaults": {"sandbox": true}, "servers": {"fs": {"command": "fs", "sandbox": false}}}`, owner, root, func(t *testing.T, s *confine.Spec) {
			if s != nil {
				t.Errorf("confined: %+v", s)
			}
		}},
		{"defaults on for everyone", `{"defaults": {"sandbox": {"network": ["api.github.com"], "read": ["/opt/d"]}}, "servers": {"fs": {"command": "fs", "sandbox": {"read": ["/opt/e"], "limits": {"memory": "1GiB"}}}, "gh": {"command": "gh"}}}`, owner, root, func(t *testing.T, s *confine.Spec) {
			want(t, s, confine.WhyConfig, sandbox.Enforce, sandbox.NetworkProxy)
			if !slices.Equal(s.Allow, []string{"api.github.com"}) || !slices.Equal(s.Read, []string{"/opt/d", "/opt/e"}) || s.Limits.Memory != 1<<30 || s.Limits.Processes != confine.DefaultLimits.Processes {
				t.Errorf("the server's setting over the defaults': %+v", s)
			}
		}},
		{"registry-added entry", `{"servers": {"fs": {"command": "node", "args": ["/state/registry/npm/x@1/node_modules/x/i.js"], "sandbox": true}}}`, owner, "", func(t *testing.T, s *confine.Spec) {
			want(t, s, confine.WhyConfig, sandbox.Enforce, sandbox.NetworkNone)
			if len(s.Write) != 0 {
				t.Errorf("a rootless instance writes %v, want nothing but its private directory", s.Write)
			}
		}},
		{"best-effort for the owner", `{"servers": {"fs": {"command": "fs", "sandbox": "best-effort"}}}`, owner, root, func(t *testing.T, s *confine.Spec) {
			want(t, s, confine.WhyConfig, sandbox.BestEffort, sandbox.NetworkNone)
		}},
		{"a grant holder, config silent: forced", `{"servers": {"fs": {"command": "fs"}}}`, grant, root, func(t *testing.T, s *confine.Spec) {
			want(t, s, confine.WhyCaller, sandbox.Enforce, sandbox.NetworkNone)
			if !slices.Equal(s.Write, []string{root}) {
				t.Errorf("write %v, want the root", s.Write)
			}
		}},
		{"a grant holder, config opts out: forced all the same", `{"servers": {"fs": {"command": "fs", "sandbox": false, "inheritEnv": true}}}`, grant, root, func(t *testing.T, s *confine.Spec) {
			want(t, s, confine.WhyCaller, sandbox.Enforce, sandbox.NetworkNone)
		}},
		{"a grant holder gets enforce, not best-effort", `{"servers": {"fs": {"command": "fs", "sandbox": "best-effort"}}}`, grant, root, func(t *testing.T, s *confine.Spec) {
			want(t, s, confine.WhyCaller, sandbox.Enforce, sandbox.NetworkNone)
		}},
		{"write never wider than the grant's roots", `{"servers": {"fs": {"command": "fs", "sandbox": {"write": ["/src/b", "/src/a/other", "${mcpx.root}/out", "${mcpx.tmpdir}/cache", "/"]}}}}`, grant, root, func(t *testing.T, s *confine.Spec) {
			if w := []string{root, "/src/a/other", root + "/out", "${mcpx.tmpdir}/cache"}; !slices.Equal(s.Write, w) {
				t.Errorf("write %v, want %v: /src/b and / lie outside the grant's /src/a", s.Write, w)
			}
		}},
		{"a root outside the grant is not writable", `{"servers": {"fs": {"command": "fs"}}}`, grant, "/elsewhere", func(t *testing.T, s *confine.Spec) {
			if len(s.Write) != 0 {
				t.Errorf("write %v, want nothing", s.Write)
			}
		}},
		{"a token with no roots named", `{"servers": {"fs": {"command": "fs", "sandbox": {"write": ["/data"]}}}}`, token, root, func(t *testing.T, s *confine.Spec) {
			want(t, s, confine.WhyCaller, sandbox.Enforce, sandbox.NetworkNone)
			if !slices.Equal(s.Write, []string{root, "/data"}) {
				t.Errorf("write %v", s.Write)
			}
		}},
		{"a url server has no child", `{"servers": {"fs": {"url": "https://mcp.example/mcp"}}}`, grant, root, func(t *testing.T, s *confine.Spec) {
			if s != nil {
				t.Errorf("confined: %+v", s)
			}
		}},
		{"root paths dropped for a rootless scope", `{"servers": {"fs": {"command": "fs", "sandbox": {"read": ["${mcpx.root}/a", "/b"], "network": "loopback", "ports": [5432]}}}}`, owner, "", func(t *testing.T, s *confine.Spec) {
			want(t, s, confine.WhyConfig, sandbox.Enforce, sandbox.NetworkLoopback)
			if !slices.Equal(s.Read, []string{"/b"}) || !slices.Equal(s.Ports, []uint16{5432}) {
				t.Errorf("read %v ports %v", s.Read, s.Ports)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := parse(c.doc)
			c.check(t, broker.EffectiveSandbox(cfg.Servers["fs"], cfg.Defaults, c.caller, c.root))
		})
	}
}

func want(t *testing.T, s *confine.Spec, why string, mode sandbox.Mode, network sandbox.Network) {
	t.Helper()
	if s == nil {
		t.Fatalf("unconfined, want confined (%s)", why)
	}
	if s.Why != why || s.Mode != mode || s.Network != network {
		t.Errorf("why %q mode %q network %q, want %q %q %q", s.Why, s.Mode, s.Network, why, mode, network)
	}
}
