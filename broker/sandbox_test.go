package broker_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/testenv"
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
		{"a CLI adapter's commands, for a grant holder", `{"servers": {"fs": {"cli": {"tools": {"cat": {"args": ["cat", "{path}"]}}}}}}`, grant, root, func(t *testing.T, s *confine.Spec) {
			want(t, s, confine.WhyCaller, sandbox.Enforce, sandbox.NetworkNone)
		}},
		{"a CLI adapter's commands, for the owner who asks", `{"servers": {"fs": {"cli": {"tools": {"cat": {"args": ["cat", "{path}"]}}}, "sandbox": true}}}`, owner, root, func(t *testing.T, s *confine.Spec) {
			want(t, s, confine.WhyConfig, sandbox.Enforce, sandbox.NetworkNone)
		}},
		{"an OpenAPI adapter starts no process", `{"servers": {"fs": {"openapi": {"spec": "/x.yaml"}}}}`, grant, root, func(t *testing.T, s *confine.Spec) {
			if s != nil {
				t.Errorf("confined: %+v", s)
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

// TestSandboxThroughTheBroker: the owner's call and a grant holder's from
// the same worktree land on two instances, the grant holder's confined
// (marked so in status, its policy what `sandbox show` says), and the
// kernel's refusal of a file outside the worktree comes back as the
// server's own error; the owner's unconfined child reads it.
func TestSandboxThroughTheBroker(t *testing.T) {
	dir := realTemp(t)
	wt := filepath.Join(dir, "wt")
	outside := filepath.Join(dir, "elsewhere.txt")
	for path, body := range map[string]string{filepath.Join(wt, "mine.txt"): "mine", outside: "the owner's"} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b := newDemoBroker(t, map[string]config.ScopeKind{"demo": config.ScopeCwd}, func(s *config.Server) { s.Env[demo.EnvProbe] = "1" })
	grant := broker.Caller{Name: "alice", Via: "tailnet", Rights: rights.Rights{{Servers: []string{"demo"}, Roots: []string{wt}}}}
	owner := req("demo", wt)
	guest := owner
	guest.Caller = grant

	read := func(r broker.Request, path string) (string, bool) {
		res, err := b.CallTool(t.Context(), r, "read", json.RawMessage(`{"path": "`+path+`"}`), nil)
		if err != nil {
			t.Fatalf("read %s as %s: %v", path, r.Caller.Name, err)
		}
		var out struct {
			Content []struct{ Text string }
			IsError bool
		}
		json.Unmarshal(res, &out)
		return out.Content[0].Text, out.IsError
	}
	spec := broker.EffectiveSandbox(&config.Server{Name: "demo", Command: "x"}, config.Defaults{}, grant, wt)
	policy := spec.Policy(confine.Facts{TmpDir: t.TempDir()})
	if _, err := sandbox.Plan(&policy, sandbox.Probe()); err != nil {
		if os.Getenv(testenv.RequireDepsEnv) == "1" {
			t.Fatalf("this kernel cannot confine a child: %v", err)
		}
		t.Skipf("this kernel cannot confine a child: %v", err) // the sandbox package's tests say why
	}
	if got, isErr := read(owner, outside); isErr || got != "the owner's" {
		t.Errorf("the owner's unconfined child reading outside the worktree: %q (error %v)", got, isErr)
	}
	if got, isErr := read(guest, filepath.Join(wt, "mine.txt")); isErr || got != "mine" {
		t.Errorf("the grant holder's child reading its worktree: %q (error %v)", got, isErr)
	}
	if got, isErr := read(guest, outside); !isErr || !strings.Contains(got, "permission denied") {
		t.Errorf("the grant holder's child reading outside the worktree: %q (error %v), want the kernel's permission denied as the tool's error", got, isErr)
	}
	ownerPid, guestPid := callText(t, b, owner, "pid", `{}`), callText(t, b, guest, "pid", `{}`)
	if ownerPid == guestPid {
		t.Errorf("the owner and a grant holder share the child %s", ownerPid)
	}
	var confined []broker.Instance
	for _, in := range b.Instances() {
		if in.Sandbox != nil {
			confined = append(confined, in)
		}
	}
	if n := len(b.Instances()); n != 2 || len(confined) != 1 || strconv.Itoa(confined[0].Pid) != guestPid {
		t.Fatalf("instances %+v: want two, the grant holder's (pid %s) confined", b.Instances(), guestPid)
	}
	in := confined[0]
	if in.Sandbox.Why != confine.WhyCaller || in.Key != "cwd:"+wt {
		t.Errorf("the confined instance: why %q key %q", in.Sandbox.Why, in.Key)
	}

	v, err := b.Sandbox(t.Context(), guest)
	if err != nil {
		t.Fatal(err)
	}
	if v.Spec == nil || v.Spec.Fingerprint() != in.Sandbox.Fingerprint || v.Key != in.Key || v.Refused != "" {
		t.Fatalf("sandbox show: %+v, want the running instance's policy (%s)", v, in.Sandbox.Fingerprint)
	}
	if !slices.Contains(v.Policy.Write, wt) || slices.Contains(v.Policy.Read, dir) || !slices.Contains(v.Policy.Read, filepath.Dir(os.Args[0])) {
		t.Errorf("sandbox show's paths: read %v write %v", v.Policy.Read, v.Policy.Write)
	}
	if f, ok := v.Enforcement.Feature(sandbox.FeatureFilesystem); !ok || !f.Enforced {
		t.Errorf("sandbox show's enforcement: %v", v.Enforcement)
	}
	mine, err := b.Sandbox(t.Context(), owner)
	if err != nil || mine.Spec != nil {
		t.Errorf("sandbox show for the owner: %+v, %v; want unconfined", mine, err)
	}
}

// realTemp is t.TempDir with its symbolic links resolved, as the broker
// canonicalises cwds.
func realTemp(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}
