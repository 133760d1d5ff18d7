package defaults_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/defaults"
	"mcpx.dev/mcpx/observe/daemonlog"
)

// TestDocumentIsWhatRuns: every value of the defaults document is what a
// config that sets nothing gets — parsed, normalized and marshalled as
// `mcpx config show` prints it — or, for a zero the config leaves as it
// is, what that zero stands for where it is applied.
func TestDocumentIsWhatRuns(t *testing.T) {
	var doc map[string]map[string]any
	if err := json.Unmarshal(defaults.Document, &doc); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(`{"servers": {"c": {"command": "x"}, "u": {"url": "https://example.com/mcp"}}}`), "t.json")
	if err != nil {
		t.Fatal(err)
	}
	shown := func(v any) map[string]any {
		b, _ := json.Marshal(v)
		var m map[string]any
		json.Unmarshal(b, &m)
		return m
	}
	// What a zero stands for where the config leaves it zero.
	zeros := map[string]any{
		"servers.<command server>.environment": "host", "servers.<command server>.protocol": "auto", "servers.<url server>.protocol": "auto",
		"servers.<command server>.roots": true, "servers.<command server>.min": 0.0, "servers.<url server>.min": 0.0,
		"servers.<command server>.warm": false, "servers.<url server>.warm": false,
		"pool.health": map[string]any{"interval": "off", "timeout": config.Duration(defaults.HealthTimeout).String()},
		"nix.binary":  "nix", "nix.offline": false, "records.bodies": false,
		"log.level": "info", "log.maxBytes": float64(daemonlog.DefaultMaxBytes), "log.maxFiles": float64(daemonlog.DefaultMaxFiles),
	}
	sections := map[string]map[string]any{
		"servers.<command server>": shown(cfg.Servers["c"]), "servers.<url server>": shown(cfg.Servers["u"]),
		"pool": shown(cfg.Pool), "limits": shown(cfg.Limits), "nix": shown(cfg.Nix), "records": shown(cfg.Records), "log": shown(cfg.Log),
	}
	check := func(section string, want map[string]any) {
		got := sections[section]
		for k, v := range want {
			path := section + "." + k
			g, ok := got[k]
			if !ok {
				g, ok = zeros[path]
			}
			if !ok || fmt.Sprint(g) != fmt.Sprint(v) {
				t.Errorf("%s: the document says %v, a config that sets nothing gets %v", path, v, g)
			}
		}
	}
	for name, section := range doc {
		if name != "servers" {
			check(name, section)
			continue
		}
		for kind, s := range section {
			check("servers."+kind, s.(map[string]any))
		}
	}
	// And the other way: every default a parsed config fills in is in the
	// document.
	for _, name := range []string{"pool", "limits", "nix", "records"} {
		for k := range sections[name] {
			if _, ok := doc[name][k]; !ok {
				t.Errorf("%s.%s: filled in by the config, missing from the document", name, k)
			}
		}
	}
}
