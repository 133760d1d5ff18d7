package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/petstoretest"
)

// OpenAPI servers on every surface: the Swagger Petstore document served
// by a petstore test service, called through REST and /mcp; and mcpx
// importing itself, its own /openapi.json a server whose listServers and
// callTool are tools.

func petsConfig(t testing.TB, base string) *config.Config {
	cfg := apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "global"}`})
	doc, _ := json.Marshal(map[string]any{"servers": map[string]any{"pets": map[string]any{"openapi": map[string]any{
		"spec": petstoretest.Spec(), "baseUrl": base + "/api/v3", "operations": []string{"getPetById", "findPetsByStatus", "addPet"},
	}}}})
	pets, err := config.Parse(doc, "pets.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Servers["pets"] = pets.Servers["pets"]
	return cfg
}

func TestOpenAPIServerOnRESTAndMCP(t *testing.T) {
	cfg := petsConfig(t, petstoretest.Start(t))
	broken := filepath.Join(t.TempDir(), "broken.yaml")
	os.WriteFile(broken, []byte("openapi: 3.0.3\ninfo: {title: b, version: '1'}\nservers: [{url: 'http://127.0.0.1:9'}]\npaths:\n  /x:\n    get:\n      operationId: x\n      responses:\n        '200':\n          description: ok\n          content:\n            application/json:\n              schema: {$ref: '#/components/schemas/Missing'}\n"), 0o600)
	cfg.Servers["broken"] = &config.Server{Name: "broken", OpenAPI: &config.OpenAPI{Spec: broken}, Scope: config.ScopeGlobal}
	d := apitest.Start(t, apitest.Options{Config: cfg})

	// A document with a broken $ref fails that server, with the parser's
	// message (to the owner), and no other.
	r := d.Unix.Do(t, "GET", "/v1/servers/broken/tools", "")
	if r.StatusCode != 502 || !strings.Contains(string(r.Bytes), "Missing") {
		t.Errorf("the broken server's tools: %d %s, want a failed start naming the missing $ref", r.StatusCode, r.Bytes)
	}

	r = d.Unix.Do(t, "POST", "/v1/servers/pets/tools/getPetById", `{"petId": 1}`)
	if got := r.Result(t); got.IsError || !strings.Contains(got.Text(), `"name":"doggie"`) {
		t.Errorf("REST getPetById: %+v", got)
	}
	r = d.Unix.Do(t, "POST", "/v1/servers/pets/tools/getPetById", `{"petId": 404}`)
	if got := r.Result(t); !got.IsError || !strings.Contains(got.Text(), "404") {
		t.Errorf("REST getPetById of a missing pet: %+v, want an isError naming 404", got)
	}
	r = d.Unix.Do(t, "GET", "/v1/servers/pets/tools", "")
	if r.StatusCode != 200 || !strings.Contains(string(r.Bytes), `"findPetsByStatus"`) || strings.Contains(string(r.Bytes), `"deletePet"`) {
		t.Errorf("the tools of pets: %d %s", r.StatusCode, r.Bytes)
	}
	r = d.Unix.Do(t, "GET", "/v1/servers/pets/openapi.json", "")
	if r.StatusCode != 200 || !strings.Contains(string(r.Bytes), "getPetById") {
		t.Errorf("pets' OpenAPI document: %d %.300s", r.StatusCode, r.Bytes)
	}

	_, cs := d.ConnectMCP(t, "/mcp", "", nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "pets__addPet", Arguments: map[string]any{"body": map[string]any{"name": "rex", "status": "sold"}}})
	if err != nil || res.IsError {
		t.Fatalf("/mcp addPet: %v %+v", err, res)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "pets__findPetsByStatus", Arguments: map[string]any{"status": "sold"}})
	if err != nil || res.IsError {
		t.Fatalf("/mcp findPetsByStatus: %v %+v", err, res)
	}
	if b, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(b), `"result":[{"id":2,"name":"rex","status":"sold"}]`) {
		t.Errorf("findPetsByStatus sold: %s", b)
	}
}

// TestOpenAPIImportsMcpxItself: the daemon's own document as a server,
// reaching it on loopback TCP with its token from the environment.
func TestOpenAPIImportsMcpxItself(t *testing.T) {
	t.Setenv("MCPX_SELF_TOKEN", apitest.Token)
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "global"}`})})
	cfg := apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "global"}`})
	doc, _ := json.Marshal(map[string]any{"servers": map[string]any{"self": map[string]any{"openapi": map[string]any{
		"spec":       "http://" + d.TCPAddr + "/openapi.json",
		"baseUrl":    "http://" + d.TCPAddr,
		"headers":    map[string]string{"Authorization": "Bearer ${env:MCPX_SELF_TOKEN}", "Mcpx-Client": "openapi-self"},
		"operations": []string{"listServers", "callTool"},
	}}}})
	self, err := config.Parse(doc, "self.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Servers["self"] = self.Servers["self"]
	d.Broker.Reload(cfg, "test")

	r := d.Unix.Do(t, "POST", "/v1/servers/self/tools/listServers", `{}`)
	if got := r.Result(t); got.IsError || !strings.Contains(got.Text(), `"name":"demo"`) || !strings.Contains(got.Text(), `"name":"self"`) {
		t.Errorf("self.listServers: %+v", got)
	}
	r = d.Unix.Do(t, "POST", "/v1/servers/self/tools/callTool", `{"server": "demo", "tool": "echo", "body": {"message": "through myself"}}`)
	if got := r.Result(t); got.IsError || !strings.Contains(got.Text(), "through myself") {
		t.Errorf("self.callTool demo.echo: %+v", got)
	}
}

// BenchmarkOpenAPICall: one petstore getPetById through mcpx (REST on the
// unix socket, the openapi server's warm instance) against the same
// request sent to the service directly; bench/README.md has the ratio.
//
//	go test -run '^$' -bench OpenAPICall -count 5 ./api
func BenchmarkOpenAPICall(b *testing.B) {
	base := petstoretest.Start(b)
	d := apitest.Start(b, apitest.Options{Config: petsConfig(b, base)})
	run := func(b *testing.B, hc *http.Client, method, url, body string) {
		for b.Loop() {
			req, _ := http.NewRequest(method, url, strings.NewReader(body))
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(out), "doggie") {
				b.Fatalf("%d %s", resp.StatusCode, out)
			}
		}
	}
	b.Run("direct", func(b *testing.B) { run(b, http.DefaultClient, "GET", base+"/api/v3/pet/1", "") })
	b.Run("mcpx", func(b *testing.B) {
		run(b, d.Unix.HTTP, "POST", d.Unix.Base+"/v1/servers/pets/tools/getPetById", `{"petId": 1}`)
	})
}
