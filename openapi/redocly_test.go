package openapi_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/openapi"
)

// The document lints clean (no errors) with @redocly/cli's recommended
// rules, pinned in testdata/npm. Warnings are allowed and shown.
func TestBrokerRedoclyLint(t *testing.T) {
	node := testenv.Node(t)
	cli := testenv.NPMPackageBinNamed(t, "@redocly/cli", "redocly")
	doc := filepath.Join(t.TempDir(), "broker.json")
	if err := os.WriteFile(doc, brokerDoc(t), 0o644); err != nil {
		t.Fatal(err)
	}
	lint := func(path string) (string, error) {
		cmd := exec.CommandContext(t.Context(), node, cli, "lint", "--format=stylish", path)
		cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := lint(doc)
	t.Logf("redocly lint:\n%s", out)
	if err != nil {
		t.Fatalf("redocly lint found errors: %v", err)
	}
	// The linter fails a broken document: a $ref to a missing component.
	var d map[string]any
	if err := json.Unmarshal(brokerDoc(t), &d); err != nil {
		t.Fatal(err)
	}
	delete(d["components"].(map[string]any)["schemas"].(map[string]any), "Health")
	b, _ := json.Marshal(d)
	broken := filepath.Join(t.TempDir(), "broken.json")
	if err := os.WriteFile(broken, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := lint(broken); err == nil || !strings.Contains(out, "no-unresolved-refs") {
		t.Errorf("redocly lint passed a document with a dangling $ref (%v):\n%s", err, out)
	}
}

// redoclyLint lints doc, failing t on an error (warnings are shown).
func redoclyLint(t *testing.T, doc []byte) {
	t.Helper()
	node := testenv.Node(t)
	cli := testenv.NPMPackageBinNamed(t, "@redocly/cli", "redocly")
	path := filepath.Join(t.TempDir(), "doc.json")
	if err := os.WriteFile(path, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), node, cli, "lint", "--format=stylish", path)
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
	out, err := cmd.CombinedOutput()
	t.Logf("redocly lint:\n%s", out)
	if err != nil {
		t.Fatalf("redocly lint found errors: %v", err)
	}
}

// A combined document whose servers have broken tools among good ones, and
// schemas using every carried construct, lints clean.
func TestToolsRedoclyLint(t *testing.T) {
	var fid []map[string]any
	for _, f := range fidelity {
		fid = append(fid, map[string]any{"name": f.name, "inputSchema": json.RawMessage(f.schema)})
	}
	doc, err := openapi.CombinedDocument(openapi.Options{Version: "test"}, []openapi.Server{
		{Name: "mixed", Tools: toolsJSON(t, mixedTools...)},
		{Name: "fid", Description: "Schemas of every kind.", Tools: toolsJSON(t, fid...)},
	})
	if err != nil {
		t.Fatal(err)
	}
	redoclyLint(t, doc)
}
