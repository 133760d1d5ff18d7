package config_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"mcpx.dev/mcpx/config"
)

func TestSandboxDecodes(t *testing.T) {
	for _, c := range []struct {
		doc  string
		want string // the server's sandbox as `mcpx config show` prints it
	}{
		{`{"servers": {"a": {"command": "x", "sandbox": true}}}`, `true`},
		{`{"servers": {"a": {"command": "x", "sandbox": false}}}`, `false`},
		{`{"servers": {"a": {"command": "x", "sandbox": "best-effort"}}}`, `"best-effort"`},
		{`{"servers": {"a": {"command": "x"}}}`, `null`},
		{`{"servers": {"a": {"command": "x", "sandbox": {"network": ["api.github.com", "*.npmjs.org"], "limits": {"memory": "512MiB", "cpu": "10m", "processes": 0}}}}}`,
			`{"network":["api.github.com","*.npmjs.org"],"limits":{"memory":"512MiB","processes":0,"cpu":"10m0s"}}`},
		{`{"servers": {"a": {"command": "x", "sandbox": {"read": ["/opt/d"], "write": ["${mcpx.root}/out", "${mcpx.tmpdir}"], "network": "loopback", "ports": [5432], "mode": "best-effort"}}}}`,
			`{"mode":"best-effort","read":["/opt/d"],"write":["${mcpx.root}/out","${mcpx.tmpdir}"],"network":"loopback","ports":[5432]}`},
		{`{"servers": {"a": {"command": "x", "sandbox": {"limits": {"memory": 1073741824}}}}}`, `{"limits":{"memory":"1GiB"}}`},
	} {
		cfg, err := config.Parse([]byte(c.doc), "t.json")
		if err != nil {
			t.Errorf("%s: %v", c.doc, err)
			continue
		}
		b, _ := json.Marshal(cfg.Servers["a"].Sandbox)
		if string(b) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.doc, b, c.want)
		}
		var back config.Sandbox
		if c.want != "null" {
			if err := json.Unmarshal(b, &back); err != nil {
				t.Errorf("%s does not read back: %v", b, err)
			} else if b2, _ := json.Marshal(back); string(b2) != string(b) {
				t.Errorf("%s reads back as %s", b, b2)
			}
		}
	}
}

// TestSandboxErrors: each problem names the server and the field, and
// says what to write.
func TestSandboxErrors(t *testing.T) {
	for _, c := range []struct {
		doc, field string
		want       []string
	}{
		{`{"servers": {"a": {"command": "x", "sandbox": "best-efort"}}}`, "sandbox", []string{`did you mean "best-effort"?`}},
		{`{"servers": {"a": {"command": "x", "sandbox": 1}}}`, "sandbox", []string{`want true, false, "best-effort" or an object`}},
		{`{"servers": {"a": {"command": "x", "sandbox": {"netwrk": "none"}}}}`, "sandbox.netwrk", []string{`did you mean "network"?`}},
		{`{"servers": {"a": {"command": "x", "sandbox": {"network": "loopbak"}}}}`, "sandbox.network", []string{`did you mean "loopback"?`}},
		{`{"servers": {"a": {"command": "x", "sandbox": {"network": ["https://api.github.com/v3"]}}}}`, "sandbox.network", []string{`name the host, not a URL: "api.github.com"`}},
		{`{"servers": {"a": {"command": "x", "sandbox": {"network": ["*"]}}}}`, "sandbox.network", []string{`"*" alone would allow every host`}},
		{`{"servers": {"a": {"command": "x", "sandbox": {"network": []}}}}`, "sandbox.network", []string{"an empty host list"}},
		{`{"servers": {"a": {"command": "x", "sandbox": {"read": ["data"]}}}}`, "sandbox.read[0]", []string{"is not absolute", "${mcpx.root}"}},
		{`{"servers": {"a": {"command": "x", "sandbox": {"write": ["${mcpx.cwd}/x"]}}}}`, "sandbox.write[0]", []string{"${mcpx.cwd}"}},
		{`{"servers": {"a": {"command": "x", "sandbox": {"mode": "strict"}}}}`, "sandbox.mode", []string{"enforce, best-effort"}},
		{`{"servers": {"a": {"command": "x", "sandbox": {"limits": {"memory": "2G"}}}}}`, "sandbox.limits.memory", []string{`did you mean "2GiB"?`}},
		{`{"servers": {"a": {"command": "x", "sandbox": {"limits": {"procs": 3}}}}}`, "sandbox.limits.procs", []string{"processes"}},
		{`{"servers": {"a": {"command": "x", "sandbox": {"limits": {"processes": -1}}}}}`, "sandbox.limits.processes", []string{"use 0 for no limit"}},
		{`{"servers": {"a": {"command": "x", "sandbox": {"network": "none", "ports": [80]}}}}`, "sandbox.ports", []string{`"loopback"`}},
		{`{"servers": {"u": {"url": "https://mcp.example/mcp", "sandbox": true}}}`, "sandbox", []string{"url server"}},
		{`{"servers": {"o": {"openapi": {"spec": "/x.yaml"}, "sandbox": true}}}`, "sandbox", []string{"OpenAPI adapter starts no process"}},
		{`{"servers": {"a": {"command": "x", "sandbox": true, "inheritEnv": ["AWS_PROFILE"]}}}`, "inheritEnv", []string{`set the variables it needs in "env"`}},
		{`{"defaults": {"sandbox": true}, "servers": {"a": {"command": "x", "inheritEnv": true}}}`, "inheritEnv", []string{`"defaults"`, `"sandbox": false`}},
		{`{"defaults": {"sandbox": true}, "servers": {"a": {"command": "x", "environment": "flake:.#dev"}}}`, "environment", []string{"nix environment"}},
		{`{"defaults": {"sandbx": true}, "servers": {"a": {"command": "x"}}}`, "defaults.sandbx", []string{`did you mean "sandbox"?`}},
	} {
		_, err := config.Parse([]byte(c.doc), "t.json")
		var ce *config.Error
		if !errors.As(err, &ce) {
			t.Errorf("%s: accepted", c.doc)
			continue
		}
		var p *config.Problem
		for _, e := range ce.Errs {
			if q := e.(*config.Problem); q.Field == c.field {
				p = q
			}
		}
		if p == nil {
			t.Errorf("%s: no problem names the field %s: %v", c.doc, c.field, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(p.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.doc, p.Error(), w)
			}
		}
	}
	// A CLI adapter's commands are confined as children are.
	if _, err := config.Parse([]byte(`{"servers": {"c": {"cli": {"tools": {"cat": {"args": ["cat", "{path}"]}}}, "sandbox": {"limits": {"memory": "256MiB"}}}}}`), "t.json"); err != nil {
		t.Errorf("a CLI adapter's sandbox is refused: %v", err)
	}
	// A server that opts out keeps its inheritEnv under confining defaults.
	if _, err := config.Parse([]byte(`{"defaults": {"sandbox": true}, "servers": {"a": {"command": "x", "sandbox": false, "inheritEnv": ["A"]}}}`), "t.json"); err != nil {
		t.Errorf("an opted-out server's inheritEnv is refused: %v", err)
	}
}
