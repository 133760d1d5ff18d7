package api_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// openAPIServers is a daemon serving the demo server and the real servers
// of the acceptance test: server-everything, server-filesystem (over files)
// and gopls (over a small module, offline).
func openAPIServers(t *testing.T) (d *apitest.Daemon, files string) {
	t.Helper()
	proctest.CheckNoLeaks(t)
	node := testenv.Node(t)
	gopls := testenv.Gopls(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	files = t.TempDir()
	testenv.WriteFiles(t, files, map[string]string{
		"go.mod":         "module example.com/m\n\ngo 1.26\n",
		"greet/greet.go": "// Package greet says hello.\npackage greet\n\n// Hello greets name.\nfunc Hello(name string) string { return \"hello, \" + name }\n",
	})
	marker := map[string]string{proctest.MarkerEnv: proctest.Marker(t)}
	goEnv := map[string]string{proctest.MarkerEnv: proctest.Marker(t), "HOME": t.TempDir(), "GOFLAGS": "-mod=mod",
		"GOPROXY": "off", "GOTOOLCHAIN": "local", "GOWORK": "off", "GOTELEMETRY": "off"}
	if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil && strings.TrimSpace(string(out)) != "" {
		goEnv["GOCACHE"] = strings.TrimSpace(string(out)) // shared: safe for concurrent use, and warm
	}
	raw, _ := json.Marshal(map[string]any{"servers": map[string]any{
		"demo":       map[string]any{"command": exe, "env": map[string]string{proctest.MarkerEnv: proctest.Marker(t), demo.EnvServer: "1"}, "scope": "global"},
		"everything": map[string]any{"command": node, "args": []string{testenv.NPMPackageBin(t, "@modelcontextprotocol/server-everything")}, "env": marker, "scope": "global"},
		"filesystem": map[string]any{"command": node, "args": []string{testenv.NPMPackageBin(t, "@modelcontextprotocol/server-filesystem"), files}, "env": marker, "scope": "global"},
		"gopls":      map[string]any{"command": gopls, "args": []string{"mcp"}, "cwd": files, "env": goEnv, "scope": "global", "startTimeout": "1m"},
	}})
	cfg, err := config.Parse(raw, "openapi-ts.json")
	if err != nil {
		t.Fatal(err)
	}
	return apitest.Start(t, apitest.Options{Config: cfg}), files
}

// TestOpenAPITypeScript is issue 8's acceptance of the documents by
// openapi-typescript (pinned in testdata/openapi-typescript): it writes
// types from the broker's document and from the per-server documents of
// the demo server, server-everything, server-filesystem and gopls, and
// tsc --strict (typescript, pinned in testdata/npm) accepts a program that
// types a request body and a result of one tool of each, and whose
// @ts-expect-error lines prove the types are not any. With one tool's
// schema dropped, the same program is refused.
func TestOpenAPITypeScript(t *testing.T) {
	node := testenv.Node(t)
	gen := testenv.NPMPrefixBin(t, "openapi-typescript", "openapi-typescript", "")
	tsc := testenv.NPMPackageBin(t, "typescript")
	d, files := openAPIServers(t)
	dir := t.TempDir()
	docs := map[string][]byte{}
	fetch := func(name, path string) {
		r := d.Unix.Do(t, "GET", path, "", cwdHeader(files)...)
		if r.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, r.StatusCode, r.Bytes)
		}
		docs[name] = r.Bytes
	}
	fetch("broker", "/openapi.json")
	for _, s := range []string{"demo", "everything", "filesystem", "gopls"} {
		fetch(s, "/v1/servers/"+s+"/openapi.json")
	}
	generate := func(name string, doc []byte) {
		t.Helper()
		in := filepath.Join(dir, name+".json")
		if err := os.WriteFile(in, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(t.Context(), node, gen, in, "-o", filepath.Join(dir, name+".ts"))
		cmd.Env = append(os.Environ(), proctest.Env(t))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("openapi-typescript %s: %v\n%s", name, err, out)
		}
	}
	for name, doc := range docs {
		generate(name, doc)
	}
	src, err := os.ReadFile(filepath.Join("testdata", "openapi-ts", "use.ts"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "use.ts"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	check := func() (string, bool) {
		cmd := exec.CommandContext(t.Context(), node, tsc, "--strict", "--noEmit", "--pretty", "false",
			"--target", "es2022", "--module", "esnext", "--moduleResolution", "bundler",
			"--allowImportingTsExtensions", "--types", "", "use.ts")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), proctest.Env(t))
		out, err := cmd.CombinedOutput()
		if _, exited := err.(*exec.ExitError); err != nil && !exited {
			t.Fatalf("running tsc: %v", err)
		}
		return string(out), err == nil
	}
	if out, ok := check(); !ok {
		t.Fatalf("tsc --strict refused the program using the generated types:\n%s", out)
	}

	// demo.add's arguments untyped: its @ts-expect-error line has no error
	// left, which tsc reports.
	var doc map[string]any
	if err := json.Unmarshal(docs["demo"], &doc); err != nil {
		t.Fatal(err)
	}
	body := doc["paths"].(map[string]any)["/v1/servers/demo/tools/add"].(map[string]any)["post"].(map[string]any)["requestBody"].(map[string]any)
	body["content"].(map[string]any)["application/json"].(map[string]any)["schema"] = map[string]any{}
	untyped, _ := json.Marshal(doc)
	generate("demo", untyped)
	if out, ok := check(); ok || !strings.Contains(out, "TS2578") {
		t.Errorf("tsc accepted the program with demo.add untyped, or for another reason (want TS2578, an unused @ts-expect-error):\n%s", out)
	}
}
