package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/openapi"
	"mcpx.dev/mcpx/wire"
)

// loadDoc fails t unless b is a valid OpenAPI 3.1 document (kin-openapi).
func loadDoc(t *testing.T, b []byte) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatalf("loading: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("validating: %v", err)
	}
	return doc
}

// toolOps maps x-mcp-tool to the operations of a tool document.
func toolOps(t *testing.T, doc *openapi3.T) map[string]*openapi3.Operation {
	t.Helper()
	out := map[string]*openapi3.Operation{}
	for path, item := range doc.Paths.Map() {
		if item.Post == nil {
			t.Errorf("%s: no POST operation", path)
			continue
		}
		name, _ := item.Post.Extensions[openapi.XTool].(string)
		server, _ := item.Post.Extensions[openapi.XServer].(string)
		out[server+"/"+name] = item.Post
	}
	return out
}

func listedTools(t *testing.T, d *apitest.Daemon, server string, cwd []string) []string {
	t.Helper()
	var st struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	d.Unix.Do(t, "GET", "/v1/servers/"+server+"/tools", "", cwd...).Decode(t, &st)
	var names []string
	for _, tl := range st.Tools {
		names = append(names, server+"/"+tl.Name)
	}
	slices.Sort(names)
	return names
}

// A server's document has one typed operation per tool its child lists,
// is built once while the list is unchanged, and carries an ETag that a
// conditional request gets 304 for.
func TestServerOpenAPIOfDemo(t *testing.T) {
	var docs *openapi.Cache // the handler's tool documents, whose builds are counted
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "global"}`}),
		Handler: func(o api.Options) http.Handler {
			h, cache := api.NewWithToolDocs(o)
			docs = cache
			return h
		}})
	cwd := cwdHeader(t.TempDir())
	r := d.Unix.Do(t, "GET", "/v1/servers/demo/openapi.json", "", cwd...)
	if r.StatusCode != 200 || r.Header.Get("Content-Type") != wire.MediaJSON {
		t.Fatalf("status %d, Content-Type %q: %s", r.StatusCode, r.Header.Get("Content-Type"), r.Bytes)
	}
	etag := r.Header.Get("ETag")
	doc := loadDoc(t, r.Bytes)
	ops := toolOps(t, doc)
	if got, want := slices.Sorted(func(yield func(string) bool) {
		for k := range ops {
			if !yield(k) {
				return
			}
		}
	}), listedTools(t, d, "demo", cwd); !slices.Equal(got, want) {
		t.Fatalf("operations %v, tools %v", got, want)
	}
	for name, op := range ops {
		if why, ok := op.Extensions[openapi.XSchemaError]; ok {
			t.Errorf("%s: not carried over: %v", name, why)
		}
	}

	// A real result of add conforms to its operation's typed answer, whose
	// structuredContent is the tool's outputSchema: a changed sum does not.
	res := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/add", `{"a": 2, "b": 3}`, cwd...)
	var v map[string]any
	res.Decode(t, &v)
	schema := ops["demo/add"].Responses.Value("200").Value.Content.Get(wire.MediaJSON).Schema.Value
	if err := schema.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		t.Errorf("add's result does not match its operation: %v\n%s", err, res.Bytes)
	}
	sc, ok := v["structuredContent"].(map[string]any)
	if !ok {
		t.Fatalf("add's result has no structuredContent: %s", res.Bytes)
	}
	sc["sum"] = "five"
	if schema.VisitJSON(v, openapi3.EnableJSONSchema2020()) == nil {
		t.Error("a string sum matches add's typed result")
	}

	// Unchanged list: the same document from memory, and 304 for its ETag.
	builds := docs.Builds()
	again := d.Unix.Do(t, "GET", "/v1/servers/demo/openapi.json", "", cwd...)
	if string(again.Bytes) != string(r.Bytes) || again.Header.Get("ETag") != etag || etag == "" {
		t.Errorf("second answer: ETag %q (first %q), same body %v", again.Header.Get("ETag"), etag, string(again.Bytes) == string(r.Bytes))
	}
	nm := d.Unix.Do(t, "GET", "/v1/servers/demo/openapi.json", "", append(cwd, "If-None-Match", etag)...)
	if nm.StatusCode != 304 || len(nm.Bytes) != 0 || nm.Header.Get("ETag") != etag {
		t.Errorf("If-None-Match %s: status %d, %d bytes, ETag %q", etag, nm.StatusCode, len(nm.Bytes), nm.Header.Get("ETag"))
	}
	if docs.Builds() != builds {
		t.Errorf("%d builds after two more requests for an unchanged list, was %d", docs.Builds(), builds)
	}
	stale := d.Unix.Do(t, "GET", "/v1/servers/demo/openapi.json", "", append(cwd, "If-None-Match", `"stale"`)...)
	if stale.StatusCode != 200 || string(stale.Bytes) != string(r.Bytes) {
		t.Errorf("a stale If-None-Match: status %d", stale.StatusCode)
	}

	if p := d.Unix.Do(t, "GET", "/v1/servers/nope/openapi.json", "", cwd...).Problem(t); p.Status != 404 {
		t.Errorf("unknown server: %+v", p)
	}
	// The broker's own document describes both routes.
	broker := d.Unix.Do(t, "GET", "/openapi.json", "")
	for _, path := range []string{"/v1/servers/{server}/openapi.json", "/v1/openapi.json"} {
		if loadDoc(t, broker.Bytes).Paths.Find(path) == nil {
			t.Errorf("the broker document has no %s", path)
		}
	}
}

// The documents of real servers (the demo, the npm reference servers
// server-everything and server-filesystem) validate, type every tool, and
// their combined document lints clean with redocly.
func TestToolDocumentsOfRealServers(t *testing.T) {
	proctest.CheckNoLeaks(t)
	node := testenv.Node(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{proctest.MarkerEnv: proctest.Marker(t)}
	demoEnv := map[string]string{proctest.MarkerEnv: proctest.Marker(t), demo.EnvServer: "1"}
	files := t.TempDir()
	raw, _ := json.Marshal(map[string]any{"servers": map[string]any{
		"demo":       map[string]any{"command": exe, "env": demoEnv, "scope": "global"},
		"everything": map[string]any{"command": node, "args": []string{testenv.NPMPackageBin(t, "@modelcontextprotocol/server-everything")}, "env": env, "scope": "global"},
		"filesystem": map[string]any{"command": node, "args": []string{testenv.NPMPackageBin(t, "@modelcontextprotocol/server-filesystem"), files}, "env": env, "scope": "global"},
	}})
	cfg, err := config.Parse(raw, "real.json")
	if err != nil {
		t.Fatal(err)
	}
	d := apitest.Start(t, apitest.Options{Config: cfg})
	cwd := cwdHeader(files)
	var all []string
	for _, server := range []string{"demo", "everything", "filesystem"} {
		r := d.Unix.Do(t, "GET", "/v1/servers/"+server+"/openapi.json", "", cwd...)
		if r.StatusCode != 200 {
			t.Fatalf("%s: status %d: %s", server, r.StatusCode, r.Bytes)
		}
		ops := toolOps(t, loadDoc(t, r.Bytes))
		tools := listedTools(t, d, server, cwd)
		if len(ops) != len(tools) || len(tools) == 0 {
			t.Errorf("%s: %d operations for %d tools", server, len(ops), len(tools))
		}
		for name, op := range ops {
			if why, ok := op.Extensions[openapi.XSchemaError]; ok {
				t.Errorf("%s: not carried over: %v", name, why)
			}
		}
		all = append(all, tools...)
	}
	r := d.Unix.Do(t, "GET", "/v1/openapi.json", "", cwd...)
	if r.StatusCode != 200 || r.Header.Get("ETag") == "" {
		t.Fatalf("combined: status %d, ETag %q: %s", r.StatusCode, r.Header.Get("ETag"), r.Bytes)
	}
	ops := toolOps(t, loadDoc(t, r.Bytes))
	for _, name := range all {
		if ops[name] == nil {
			t.Errorf("the combined document has no operation for %s", name)
		}
	}
	if len(ops) != len(all) {
		t.Errorf("the combined document has %d operations for %d tools", len(ops), len(all))
	}

	cli := testenv.NPMPackageBinNamed(t, "@redocly/cli", "redocly")
	path := filepath.Join(t.TempDir(), "combined.json")
	if err := os.WriteFile(path, r.Bytes, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), node, cli, "lint", "--format=stylish", path)
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", proctest.Env(t))
	out, err := cmd.CombinedOutput()
	t.Logf("redocly lint:\n%s", out)
	if err != nil {
		t.Errorf("redocly lint found errors in the combined document: %v", err)
	}
}
