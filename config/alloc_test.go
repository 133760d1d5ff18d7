package config_test

import (
	"strings"
	"testing"

	"mcpx.dev/mcpx/config"
)

func TestAllocateErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc, server, field string
		want                     []string
	}{
		{"unknown allocation", `{"servers":{"b":{"command":"x","args":["--port=${mcpx.alloc.prt}"],"allocate":{"port":{"range":[9222,9299]}}}}}`,
			"b", "args[0]", []string{"${mcpx.alloc.prt} names no allocation", "did you mean ${mcpx.alloc.port}?"}},
		{"no allocate block", `{"servers":{"b":{"command":"x","env":{"P":"${mcpx.alloc.port}"}}}}`,
			"b", "env.P", []string{"${mcpx.alloc.port} names no allocation", `declare it: "allocate": {"port": {"range"`}},
		{"reversed range", `{"servers":{"b":{"command":"x","args":["${mcpx.alloc.port}"],"allocate":{"port":{"range":[9299,9222]}}}}}`,
			"b", "allocate.port.range", []string{"range [9299, 9222] is not a port range", "1024 <= low <= high <= 65535"}},
		{"privileged range", `{"servers":{"b":{"command":"x","args":["${mcpx.alloc.port}"],"allocate":{"port":{"range":[80,90]}}}}}`,
			"b", "allocate.port.range", []string{"range [80, 90] is not a port range"}},
		{"range too high", `{"servers":{"b":{"command":"x","args":["${mcpx.alloc.port}"],"allocate":{"port":{"range":[65000,70000]}}}}}`,
			"b", "allocate.port.range", []string{"range [65000, 70000] is not a port range"}},
		{"one number", `{"servers":{"b":{"command":"x","args":["${mcpx.alloc.port}"],"allocate":{"port":{"range":[9222]}}}}}`,
			"b", "allocate.port.range", []string{"range has 1 numbers, want 2"}},
		{"misspelt range", `{"servers":{"b":{"command":"x","allocate":{"port":{"rnage":[1,2]}}}}}`,
			"b", "allocate", []string{`an allocation is {"range": [low, high]}`, "rnage"}},
		{"null allocation", `{"servers":{"b":{"command":"x","allocate":{"port":null}}}}`,
			"b", "allocate.port", []string{"the allocation is null"}},
		{"bad name", `{"servers":{"b":{"command":"x","allocate":{"a b":{"range":[9222,9223]}}}}}`,
			"b", "allocate.a b", []string{`invalid allocation name "a b"`}},
		{"url server", `{"servers":{"h":{"url":"http://127.0.0.1:${mcpx.alloc.port}/mcp","allocate":{"port":{"range":[9222,9299]}}}}}`,
			"h", "allocate", []string{"mcpx starts no child", "${mcpx.index}"}},
		{"unknown new-style name", `{"servers":{"b":{"command":"x","args":["${mcpx.tmpdr}"]}}}`,
			"b", "args[0]", []string{"unknown placeholder ${mcpx.tmpdr}", "did you mean ${mcpx.tmpdir}?", "${mcpx.alloc.NAME}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(tc.doc), "c.json")
			if err == nil {
				t.Fatalf("no error; config = %+v", cfg)
			}
			var found *config.Problem
			for _, e := range configErrors(t, err) {
				if e.Server == tc.server && e.Field == tc.field {
					found = e
				}
			}
			if found == nil {
				t.Fatalf("no problem with server %q and field %q in:\n%s", tc.server, tc.field, err)
			}
			for _, w := range append(tc.want, `server "`+tc.server+`"`) {
				if !strings.Contains(found.Error(), w) {
					t.Errorf("%q does not contain %q", found.Error(), w)
				}
			}
		})
	}
}

func TestAllocateAccepted(t *testing.T) {
	doc := `{"servers":{
		"chrome":{"command":"chrome-mcp","scope":"session","max":4,
			"args":["--port=${mcpx.alloc.port}","--profile=${mcpx.tmpdir}/p","--name=${mcpx.instance}-${mcpx.index}-${mcpx.key}"],
			"cwd":"${mcpx.tmpdir}",
			"allocate":{"port":{"range":[9222,9225]}}},
		"other":{"command":"x","scope":"session","max":2,"env":{"P":"${mcpx.alloc.p}"},"allocate":{"p":{"range":[9225,9230]}}},
		"small":{"command":"x","max":4,"env":{"P":"${mcpx.alloc.p}"},"allocate":{"p":{"range":[10000,10001]},"spare":{"range":[11000,11010]}}},
		"up":{"url":"http://up-${mcpx.index}.internal:80${mcpx.index}/mcp"}
	}}`
	cfg, err := config.Parse([]byte(doc), "c.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers["chrome"].Allocate["port"].Range; len(got) != 2 || got[0] != 9222 || got[1] != 9225 {
		t.Errorf("chrome's port range = %v", got)
	}
	want := map[string]string{
		"chrome allocate.port.range": `overlaps server "other"'s allocate.p.range [9225, 9230]`,
		"small allocate.p.range":     "holds 2 ports, fewer than max (4)",
		"small allocate.spare":       "no field uses ${mcpx.alloc.spare}",
	}
	for _, w := range cfg.Warnings {
		k := w.Server + " " + w.Field
		if sub, ok := want[k]; !ok || !strings.Contains(w.Error(), sub) {
			t.Errorf("unexpected warning %q (%s)", w.Error(), k)
		}
		delete(want, k)
	}
	for k, sub := range want {
		t.Errorf("no warning for %s saying %q", k, sub)
	}
}
