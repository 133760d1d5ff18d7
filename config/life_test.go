package config_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/config"
)

// wantProblem parses doc and wants a problem of server and field whose
// message holds each of want.
func wantProblem(t *testing.T, doc, server, field string, want ...string) {
	t.Helper()
	cfg, err := config.Parse([]byte(doc), "/etc/mcpx.json")
	if err == nil {
		t.Fatalf("no error; config = %+v", cfg)
	}
	var found *config.Problem
	for _, e := range configErrors(t, err) {
		if e.Server == server && e.Field == field {
			found = e
		}
	}
	if found == nil {
		t.Fatalf("no problem with server %q and field %q in:\n%s", server, field, err)
	}
	for _, w := range want {
		if !strings.Contains(found.Error(), w) {
			t.Errorf("%q does not contain %q", found.Error(), w)
		}
	}
}

func TestLifeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc, server, field string
		want                     []string
	}{
		{"health interval too short", `{"servers":{"x":{"command":"a","health":{"interval":"100ms"}}}}`,
			"x", "health.interval", []string{"under the minimum of 1s"}},
		{"health without interval", `{"servers":{"x":{"command":"a","health":{"timeout":"1s"}}}}`,
			"x", "health.interval", []string{"needs an interval", `"off"`}},
		{"health timeout over half the interval", `{"servers":{"x":{"command":"a","health":{"interval":"2s","timeout":"1100ms"}}}}`,
			"x", "health.timeout", []string{"over half the interval 2s", "within two intervals"}},
		{"health field misspelt", `{"servers":{"x":{"command":"a","health":{"interval":"30s","timout":"1s"}}}}`,
			"x", "health", []string{`unknown field "timout"`, `did you mean "timeout"?`}},
		{"health url on a stdio server", `{"servers":{"x":{"command":"a","health":{"interval":"30s","url":"http://h/healthz"}}}}`,
			"x", "health.url", []string{"for url servers", `drop "url"`}},
		{"health url not absolute", `{"servers":{"x":{"url":"https://h/mcp","health":{"interval":"30s","url":"/healthz"}}}}`,
			"x", "health.url", []string{`"/healthz" is not an absolute http(s) URL`}},
		{"health expect no status", `{"servers":{"x":{"url":"https://h/mcp","health":{"interval":"30s","url":"https://h/z","expect":42}}}}`,
			"x", "health.expect", []string{"expect 42 is no HTTP status"}},
		{"health expect without url", `{"servers":{"x":{"url":"https://h/mcp","health":{"interval":"30s","expect":204}}}}`,
			"x", "health.expect", []string{"no health.url"}},
		{"pool health url", `{"pool":{"health":{"interval":"30s","url":"https://h/z"}}}`,
			"", "pool.health.url", []string{"one server's", "url server's own"}},
		{"pool health too short", `{"pool":{"health":{"interval":"10ms"}}}`,
			"", "pool.health.interval", []string{"under the minimum"}},
		{"min negative", `{"servers":{"x":{"command":"a","min":-1}}}`, "x", "min", []string{"min is -1"}},
		{"min on a call server", `{"servers":{"x":{"command":"a","scope":"call","min":1}}}`,
			"x", "min", []string{"call-scoped", `"global"`}},
		{"min over max", `{"servers":{"x":{"command":"a","max":2,"min":3}}}`, "x", "min", []string{"min 3 is over max 2", "raise max to 3"}},
		{"idle scope misspelt", `{"pool":{"idleTimeout":{"sesion":"30m"}}}`,
			"", "pool.idleTimeout", []string{`unknown scope "sesion"`, `did you mean "session"?`}},
		{"idle scope not a duration", `{"pool":{"idleTimeout":{"call":30}}}`,
			"", "pool.idleTimeout", []string{"want a duration"}},
		{"idle scope negative", `{"pool":{"idleTimeout":{"call":"-1s"}}}`,
			"", "pool.idleTimeout.call", []string{"idle timeout -1s"}},
	} {
		t.Run(tc.name, func(t *testing.T) { wantProblem(t, tc.doc, tc.server, tc.field, tc.want...) })
	}
}

func TestLifeDefaults(t *testing.T) {
	cfg, err := config.Parse([]byte(`{
		"pool": {"idleTimeout": {"call": "30s", "session": "30m", "default": "10m"}, "health": {"interval": "30s"}},
		"servers": {
			"s": {"command": "a", "scope": "session"},
			"w": {"command": "a"},
			"own": {"command": "a", "scope": "session", "idleTimeout": "1m", "health": {"interval": "off"}},
			"g": {"url": "http://127.0.0.1:1/mcp", "min": 1, "warm": true, "health": {"interval": "1m", "timeout": "2s"}}
		}}`), "t.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]time.Duration{"s": 30 * time.Minute, "w": 10 * time.Minute, "own": time.Minute, "g": 10 * time.Minute} {
		if got := cfg.Servers[name].IdleTimeout.D(); got != want {
			t.Errorf("%s: idleTimeout %s, want %s", name, got, want)
		}
	}
	for name, want := range map[string][2]time.Duration{"s": {30 * time.Second, 5 * time.Second}, "w": {30 * time.Second, 5 * time.Second}, "g": {time.Minute, 2 * time.Second}} {
		h := cfg.Servers[name].Health
		if !h.On() || h.Interval.D() != want[0] || h.Timeout.D() != want[1] {
			t.Errorf("%s: health %+v, want interval %s timeout %s", name, h, want[0], want[1])
		}
	}
	if cfg.Servers["own"].Health.On() {
		t.Errorf("own: health %+v, want off", cfg.Servers["own"].Health)
	}
	// The per-scope form writes back as it was read; the plain form stays plain.
	b, _ := json.Marshal(cfg.Pool.IdleTimeout)
	if string(b) != `{"call":"30s","default":"10m0s","session":"30m0s"}` {
		t.Errorf("idleTimeout written as %s", b)
	}
	plain, err := config.Parse([]byte(`{"pool": {"idleTimeout": "7m"}}`), "t.json")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(plain.Pool.IdleTimeout); string(b) != `"7m0s"` {
		t.Errorf("plain idleTimeout written as %s", b)
	}
}

// TestHealthURLTakesThePoolInterval: {"url": ...} alone on a url server
// is checked at pool.health's pace, and keeps its URL and status.
func TestHealthURLTakesThePoolInterval(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"pool":{"health":{"interval":"20s"}},"servers":{"x":{"url":"https://h/mcp","health":{"url":"https://h/z","expect":204}}}}`), "/etc/mcpx.json")
	if err != nil {
		t.Fatal(err)
	}
	h := cfg.Servers["x"].Health
	if h.Interval.D() != 20*time.Second || h.Timeout.D() != 5*time.Second || h.URL != "https://h/z" || h.Expect != 204 {
		t.Errorf("health = %+v, want pool.health's interval 20s and timeout 5s with the server's url and expect 204", h)
	}
}

func TestWarmOnADirectoryServerWarns(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"servers": {"x": {"command": "a", "warm": true}}}`), "t.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 1 || cfg.Warnings[0].Field != "warm" || !strings.Contains(cfg.Warnings[0].Error(), `scope "global"`) {
		t.Errorf("warnings = %v, want one about warm naming scope global", cfg.Warnings)
	}
}

func TestWebhookErrors(t *testing.T) {
	for _, tc := range []struct{ name, hook, field, want string }{
		{"no url", `{"secret": "x"}`, "webhooks[0].url", "needs a url"},
		{"http off the machine", `{"url": "http://hooks.example.com/x", "secret": "x"}`, "webhooks[0].url", "in the clear"},
		{"not http", `{"url": "ftp://example.com/x", "secret": "x"}`, "webhooks[0].url", "not an http(s) URL"},
		{"credentials", `{"url": "https://u:p@example.com/x", "secret": "x"}`, "webhooks[0].url", "credentials"},
		{"no secret", `{"url": "https://example.com/x"}`, "webhooks[0].secret", "needs a secret"},
		{"partial placeholder", `{"url": "https://example.com/x", "secret": "a${env:X}"}`, "webhooks[0].secret", "whole ${env:NAME}"},
		{"event misspelt", `{"url": "https://example.com/x", "secret": "x", "events": ["crash", "wedgd"]}`, "webhooks[0].events[1]", `did you mean "wedged"?`},
		{"field misspelt", `{"url": "https://example.com/x", "secret": "x", "evnts": []}`, "webhooks[0].evnts", `did you mean "events"?`},
	} {
		t.Run(tc.name, func(t *testing.T) { wantProblem(t, `{"webhooks": [`+tc.hook+`]}`, "", tc.field, tc.want) })
	}
	cfg, err := config.Parse([]byte(`{"webhooks": [{"url": "http://127.0.0.1:9/x", "secret": "${env:HOOK}", "events": ["tool-changed", "reload-refused"]}]}`), "t.json")
	if err != nil {
		t.Fatal(err)
	}
	if w := cfg.Webhooks[0]; w.SecretEnv() != "HOOK" || len(w.Events) != 2 {
		t.Errorf("webhook %+v, want the secret from HOOK and two events", w)
	}
}

func TestModeRenamed(t *testing.T) {
	for doc, want := range map[string]string{
		`{"servers": {"x": {"command": "a", "mode": "exclusive"}}}`: `write "sharing": "exclusive"`,
		`{"servers": {"x": {"command": "a", "mode": "session"}}}`:   `write "scope": "session"`,
		`{"servers": {"x": {"command": "a", "mode": 3}}}`:           `use "sharing"`,
		`{"mcpServers": {"x": {"command": "a", "mode": "shared"}}}`: `write "sharing": "shared"`,
	} {
		_, err := config.Parse([]byte(doc), "t.json")
		if err == nil {
			t.Fatalf("%s: no error", doc)
		}
		probs := configErrors(t, err)
		if len(probs) != 1 || probs[0].Server != "x" || probs[0].Field != "mode" ||
			!strings.Contains(probs[0].Error(), `"mode" was renamed`) || !strings.Contains(probs[0].Error(), want) {
			t.Errorf("%s: problems %v, want one on x's mode with %q", doc, probs, want)
		}
	}
}
