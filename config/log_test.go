package config_test

import (
	"strings"
	"testing"

	"mcpx.dev/mcpx/config"
)

// TestLogSection: the log section's levels are read, and a bad one is an
// error naming the field with a suggestion.
func TestLogSection(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"servers": {"a": {"command": "x"}}, "log": {"level": "warn", "servers": {"a": "debug"}, "sessions": {"session:agent-7": "debug", "pid:42": "error"}, "maxBytes": 1000, "maxFiles": 2}}`), "c.json")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Log.Level != "warn" || cfg.Log.Servers["a"] != "debug" || cfg.Log.MaxBytes != 1000 || cfg.Log.MaxFiles != 2 ||
		cfg.Log.Sessions["session:agent-7"] != "debug" || cfg.Log.Sessions["pid:42"] != "error" {
		t.Errorf("log = %+v", cfg.Log)
	}
	for doc, want := range map[string][]string{
		`{"log": {"level": "wran"}}`:                    {"log.level", `did you mean "warn"?`},
		`{"log": {"level": "shout"}}`:                   {"log.level", "known levels: debug, info, warn, error"},
		`{"log": {"servers": {"a": "loud"}}}`:           {"log.servers.a", "unknown level"},
		`{"log": {"maxFiles": -1}}`:                     {"log.maxFiles", "negative"},
		`{"log": {"sessions": {"session:a": "lound"}}}`: {"log.sessions.session:a", "unknown level"},
		`{"log": {"sessions": {"agent-7": "debug"}}}`:   {"log.sessions.agent-7", "no session key", `"session:agent-7"`},
		`{"log": {"sessions": {"session:": "debug"}}}`:  {"log.sessions.session:", "no session key"},
		`{"log": {"levle": "info"}}`:                    {"log.levle", `did you mean "level"?`},
		`{"log": {"volume": "info"}}`:                   {"log.volume", "known fields: level"},
		`{"log": "debug"}`:                              {"log must be an object"},
	} {
		_, err := config.Parse([]byte(doc), "c.json")
		if err == nil {
			t.Errorf("%s: no error", doc)
			continue
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want it to say %s", doc, err, w)
			}
		}
	}
}
