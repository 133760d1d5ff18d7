package apitest

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// DemoConfig parses a config of demo servers (this test binary as a
// child: its TestMain calls demo.MaybeServe), by name; each value is a
// JSON object of more fields for that server ("env" is merged), or "".
// The children carry t's proctest marker.
func DemoConfig(t testing.TB, servers map[string]string) *config.Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(`{"servers": {`)
	first := true
	for name, extra := range servers {
		if !first {
			b.WriteString(",")
		}
		first = false
		env := map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(t)}
		var fields map[string]json.RawMessage
		if extra != "" {
			if err := json.Unmarshal([]byte(extra), &fields); err != nil {
				t.Fatalf("server %s: %v", name, err)
			}
		}
		if e, ok := fields["env"]; ok {
			var more map[string]string
			json.Unmarshal(e, &more)
			maps.Copy(env, more)
			delete(fields, "env")
		}
		fields2 := map[string]any{"command": exe, "env": env}
		for k, v := range fields {
			fields2[k] = v
		}
		js, _ := json.Marshal(fields2)
		fmt.Fprintf(&b, "%q: %s", name, js)
	}
	b.WriteString("}}")
	cfg, err := config.Parse([]byte(b.String()), "test.json")
	if err != nil {
		t.Fatalf("config %s: %v", b.String(), err)
	}
	return cfg
}

// everything is the server "everything": the npm reference server
// server-everything on node, global unless extra says otherwise (extra's
// fields are added), its children carrying t's proctest marker.
func everything(t testing.TB, extra map[string]any) map[string]any {
	t.Helper()
	def := map[string]any{"command": testenv.Node(t), "args": []string{testenv.NPMPackageBin(t, "@modelcontextprotocol/server-everything")},
		"scope": "global", "env": map[string]string{proctest.MarkerEnv: proctest.Marker(t)}}
	maps.Copy(def, extra)
	return def
}

// EverythingConfig parses a config of the server "everything" alone
// (server-everything, global unless server says otherwise; server's
// fields are added) and, if pool is not nil, its pool section.
func EverythingConfig(t testing.TB, server, pool map[string]any) *config.Config {
	t.Helper()
	doc := map[string]any{"servers": map[string]any{"everything": everything(t, server)}}
	if pool != nil {
		doc["pool"] = pool
	}
	raw, _ := json.Marshal(doc)
	cfg, err := config.Parse(raw, "everything.json")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// AddEverything adds the server "everything" (as EverythingConfig's, extra
// its added fields) to cfg, and returns cfg; nil = a config of no other
// server.
func AddEverything(t testing.TB, cfg *config.Config, extra map[string]any) *config.Config {
	t.Helper()
	if cfg == nil {
		cfg = &config.Config{Servers: map[string]*config.Server{}}
	}
	doc, _ := json.Marshal(map[string]any{"servers": map[string]any{"everything": everything(t, extra)}})
	more, err := config.Parse(doc, "everything.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Servers["everything"] = more.Servers["everything"]
	return cfg
}
