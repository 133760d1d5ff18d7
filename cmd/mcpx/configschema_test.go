package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/config"
)

// TestConfigSchemaPrintsTheSchema: `mcpx config schema` prints the
// embedded schema, byte for byte.
func TestConfigSchemaPrintsTheSchema(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"config", "schema"}, nil, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !bytes.Equal(stdout.Bytes(), config.Schema) {
		t.Error("mcpx config schema does not print config.Schema")
	}
}

// TestConfigInit: init writes the schema beside the config and a config
// that names it and loads; run again, it rewrites the schema and keeps
// the config as the user left it, and says how to name the schema in a
// config that does not.
func TestConfigInit(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sub", "config.json")
	init := func() string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), []string{"config", "init", "--config", cfg}, nil, &stdout, &stderr); code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		return stdout.String()
	}
	schema := filepath.Join(dir, "sub", config.SchemaFile)
	if out := init(); out != "wrote "+schema+"\nwrote "+cfg+"\n" {
		t.Errorf("first init printed %q", out)
	}
	got, err := os.ReadFile(schema)
	if err != nil || !bytes.Equal(got, config.Schema) {
		t.Fatalf("the schema beside the config: %v", err)
	}
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse(data, cfg)
	if err != nil {
		t.Fatalf("the config init wrote does not load: %v\n%s", err, data)
	}
	if !strings.Contains(string(data), `"$schema": "./config.schema.json"`) || c.Servers["demo"] == nil {
		t.Errorf("the config names no schema, or serves no demo server:\n%s", data)
	}

	os.WriteFile(schema, []byte("stale"), 0o644)                                //nolint:errcheck // checked below
	os.WriteFile(cfg, []byte(`{"servers": {"mine": {"command": "x"}}}`), 0o600) //nolint:errcheck
	if out := init(); !strings.Contains(out, "kept "+cfg+"; for your editor, add to it: \"$schema\": \"./config.schema.json\"") {
		t.Errorf("second init printed %q", out)
	}
	if got, _ := os.ReadFile(schema); !bytes.Equal(got, config.Schema) {
		t.Error("a second init did not rewrite the schema")
	}
	if got, _ := os.ReadFile(cfg); string(got) != `{"servers": {"mine": {"command": "x"}}}` {
		t.Errorf("a second init changed the config: %s", got)
	}
}
