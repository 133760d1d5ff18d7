package openapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"mcpx.dev/mcpx/adapter/openapi"
)

// testdata/petstore3.yaml is the Swagger Petstore's OpenAPI 3.0 document
// (OpenAPI 3.0.4) as swagger-api/swagger-petstore keeps it in
// src/main/resources/openapi.yaml (commit f1ed336a, Apache-2.0), the one
// petstore3.swagger.io serves.

// petstore is a service implementing the petstore's pet and store
// operations in memory, under /api/v3.
type petstore struct {
	mu   sync.Mutex
	pets map[int64]map[string]any
}

func newPetstore() http.Handler {
	ps := &petstore{pets: map[int64]map[string]any{
		1: {"id": 1, "name": "rex", "photoUrls": []string{}, "status": "available", "tags": []any{map[string]any{"id": 1, "name": "dog"}}},
		2: {"id": 2, "name": "tom", "photoUrls": []string{}, "status": "sold"},
	}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v3/pet", ps.add)
	mux.HandleFunc("PUT /api/v3/pet", ps.add)
	mux.HandleFunc("GET /api/v3/pet/findByStatus", ps.byStatus)
	mux.HandleFunc("GET /api/v3/pet/{petId}", ps.get)
	mux.HandleFunc("DELETE /api/v3/pet/{petId}", ps.delete)
	mux.HandleFunc("GET /api/v3/store/inventory", ps.inventory)
	mux.HandleFunc("GET /api/v3/user/login", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, "logged in user session:"+r.URL.Query().Get("username"))
	})
	mux.HandleFunc("GET /api/v3/user/logout", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("bye"))
	})
	return mux
}

func (ps *petstore) add(w http.ResponseWriter, r *http.Request) {
	var pet map[string]any
	if r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&pet) != nil {
		writeJSON(w, 400, map[string]any{"code": 400, "message": "want a JSON pet"})
		return
	}
	id, _ := pet["id"].(float64)
	ps.mu.Lock()
	ps.pets[int64(id)] = pet
	ps.mu.Unlock()
	writeJSON(w, 200, pet)
}

func (ps *petstore) get(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("petId"), 10, 64)
	if err != nil {
		writeJSON(w, 400, map[string]any{"code": 400, "message": "Invalid ID supplied"})
		return
	}
	ps.mu.Lock()
	pet, ok := ps.pets[id]
	ps.mu.Unlock()
	if !ok {
		writeJSON(w, 404, map[string]any{"code": 404, "message": "Pet not found"})
		return
	}
	writeJSON(w, 200, pet)
}

func (ps *petstore) delete(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("api_key") != "special-key" {
		writeJSON(w, 400, map[string]any{"code": 400, "message": "Invalid pet value"})
		return
	}
	id, _ := strconv.ParseInt(r.PathValue("petId"), 10, 64)
	ps.mu.Lock()
	delete(ps.pets, id)
	ps.mu.Unlock()
	w.WriteHeader(200)
}

func (ps *petstore) byStatus(w http.ResponseWriter, r *http.Request) {
	status := r.URL.Query().Get("status")
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := []any{}
	for _, id := range slices.Sorted(func(yield func(int64) bool) {
		for id := range ps.pets {
			if !yield(id) {
				return
			}
		}
	}) {
		if ps.pets[id]["status"] == status {
			out = append(out, ps.pets[id])
		}
	}
	writeJSON(w, 200, out)
}

func (ps *petstore) inventory(w http.ResponseWriter, _ *http.Request) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	inv := map[string]int{}
	for _, p := range ps.pets {
		s, _ := p["status"].(string)
		inv[s]++
	}
	writeJSON(w, 200, inv)
}

func petstoreConfig(base string) openapi.Config {
	return openapi.Config{Server: "pets", Spec: "testdata/petstore3.yaml", BaseURL: base + "/api/v3"}
}

// The petstore's 19 operations are tools named by their operationIds, with
// schemas that compile as JSON Schema 2020-12 and mean what the document
// says.
func TestPetstoreTools(t *testing.T) {
	srv, _ := serve(t, newPetstore())
	ts := tools(t, open(t, petstoreConfig(srv.URL)))
	want := []string{"addPet", "createUser", "createUsersWithListInput", "deleteOrder", "deletePet", "deleteUser",
		"findPetsByStatus", "findPetsByTags", "getInventory", "getOrderById", "getPetById", "getUserByName",
		"loginUser", "logoutUser", "placeOrder", "updatePet", "updatePetWithForm", "updateUser", "uploadFile"}
	var got []string
	for name, tool := range ts {
		got = append(got, name)
		in := compileSchema(t, name+".input", tool.InputSchema)
		if !valid(t, in, `{}`) && !strings.Contains(string(tool.InputSchema), `"required"`) {
			t.Errorf("%s: {} is invalid but nothing is required: %s", name, tool.InputSchema)
		}
		if tool.OutputSchema != nil {
			compileSchema(t, name+".output", tool.OutputSchema)
			var out struct{ Type string }
			json.Unmarshal(tool.OutputSchema, &out)
			if out.Type != "object" {
				t.Errorf("%s: outputSchema type %q, MCP requires \"object\"", name, out.Type)
			}
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("tools:\n got %v\nwant %v", got, want)
	}

	get := ts["getPetById"]
	if get.Description != "Find pet by ID.\n\nReturns a single pet." || get.Title != "Find pet by ID." {
		t.Errorf("getPetById: title %q, description %q", get.Title, get.Description)
	}
	in := compileSchema(t, "getPetById", get.InputSchema)
	for args, ok := range map[string]bool{`{"petId": 10}`: true, `{}`: false, `{"petId": "x"}`: false, `{"petId": 1, "other": 2}`: false} {
		if valid(t, in, args) != ok {
			t.Errorf("getPetById input %s: valid = %v, want %v", args, !ok, ok)
		}
	}
	out := compileSchema(t, "getPetById.output", get.OutputSchema)
	for res, ok := range map[string]bool{
		`{"id": 1, "name": "rex", "photoUrls": [], "category": {"id": 1, "name": "Dogs"}, "tags": [{"id": 1, "name": "dog"}], "status": "sold"}`: true,
		`{"id": 1, "photoUrls": []}`:                            false, // name is required
		`{"name": "a", "photoUrls": [], "status": "x"}`:         false, // not in the enum
		`{"name": "a", "photoUrls": [], "tags": [{"id": "x"}]}`: false, // Tag.id through $defs
	} {
		if valid(t, out, res) != ok {
			t.Errorf("getPetById output %s: valid = %v, want %v", res, !ok, ok)
		}
	}
	var schema struct {
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	json.Unmarshal(get.OutputSchema, &schema)
	if got := slices.Sorted(mapsKeys(schema.Defs)); !slices.Equal(got, []string{"Category", "Pet", "Tag"}) {
		t.Errorf("getPetById output $defs %v, want Category, Pet, Tag", got)
	}
	if strings.Contains(string(get.OutputSchema), `"xml"`) || strings.Contains(string(get.OutputSchema), `"example"`) {
		t.Errorf("OpenAPI-only keywords left in %s", get.OutputSchema)
	}

	// An array answer is wrapped: MCP's structuredContent is an object.
	byStatus := compileSchema(t, "findPetsByStatus.output", ts["findPetsByStatus"].OutputSchema)
	if !valid(t, byStatus, `{"result": [{"name": "a", "photoUrls": []}]}`) || valid(t, byStatus, `[]`) {
		t.Errorf("findPetsByStatus output not {result: [Pet]}: %s", ts["findPetsByStatus"].OutputSchema)
	}
	// The body takes the JSON media type of three offered.
	add := compileSchema(t, "addPet.input", ts["addPet"].InputSchema)
	if !valid(t, add, `{"body": {"name": "a", "photoUrls": ["u"]}}`) || valid(t, add, `{"body": {"name": "a"}}`) || valid(t, add, `{}`) {
		t.Errorf("addPet input not {body: Pet} required: %s", ts["addPet"].InputSchema)
	}
	if !strings.Contains(string(ts["getPetById"].Annotations), `"readOnlyHint":true`) ||
		!strings.Contains(string(ts["deletePet"].Annotations), `"destructiveHint":true`) {
		t.Errorf("annotations: get %s, delete %s", ts["getPetById"].Annotations, ts["deletePet"].Annotations)
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// The petstore service answers calls made through the tools.
func TestPetstoreCalls(t *testing.T) {
	srv, rec := serve(t, newPetstore())
	ns := open(t, petstoreConfig(srv.URL))

	res := call(t, ns, "getPetById", `{"petId": 1}`)
	if res.IsError || !strings.Contains(string(res.StructuredContent), `"name":"rex"`) {
		t.Fatalf("getPetById: %+v", res)
	}
	if r := rec.last(t); r.RequestURI != "/api/v3/pet/1" || r.Method != "GET" || !strings.Contains(r.Header.Get("Accept"), "application/json") {
		t.Errorf("getPetById sent %s %s Accept %q", r.Method, r.RequestURI, r.Header.Get("Accept"))
	}

	res = call(t, ns, "addPet", `{"body": {"id": 7, "name": "kitty", "status": "pending", "photoUrls": ["a b"], "category": {"id": 2, "name": "Cats"}, "tags": [{"id": 3, "name": "x/y"}]}}`)
	if res.IsError {
		t.Fatalf("addPet: %s", text(res))
	}
	if r := rec.last(t); r.Method != "POST" || r.RequestURI != "/api/v3/pet" || r.Header.Get("Content-Type") != "application/json" ||
		r.Body != `{"id":7,"name":"kitty","status":"pending","photoUrls":["a b"],"category":{"id":2,"name":"Cats"},"tags":[{"id":3,"name":"x/y"}]}` {
		t.Errorf("addPet sent %s %s %q %s", r.Method, r.RequestURI, r.Header.Get("Content-Type"), r.Body)
	}
	if res := call(t, ns, "getPetById", `{"petId": 7}`); !strings.Contains(string(res.StructuredContent), `"kitty"`) {
		t.Errorf("the added pet: %+v", res)
	}

	res = call(t, ns, "findPetsByStatus", `{"status": "sold"}`)
	if string(res.StructuredContent) != `{"result":[{"id":2,"name":"tom","photoUrls":[],"status":"sold"}]}` {
		t.Errorf("findPetsByStatus: %s", res.StructuredContent)
	}
	if r := rec.last(t); r.RequestURI != "/api/v3/pet/findByStatus?status=sold" {
		t.Errorf("findPetsByStatus sent %s", r.RequestURI)
	}

	res = call(t, ns, "getInventory", `{}`)
	if string(res.StructuredContent) != `{"available":1,"pending":1,"sold":1}` {
		t.Errorf("getInventory: %s", res.StructuredContent)
	}
	res = call(t, ns, "loginUser", `{"username": "a&b", "password": "p w"}`)
	if string(res.StructuredContent) != `{"result":"logged in user session:a&b"}` {
		t.Errorf("loginUser: %s", res.StructuredContent)
	}
	if r := rec.last(t); r.RequestURI != "/api/v3/user/login?username=a%26b&password=p%20w" {
		t.Errorf("loginUser sent %s", r.RequestURI)
	}
	res = call(t, ns, "logoutUser", `{}`)
	if res.IsError || res.StructuredContent != nil || text(res) != "bye" {
		t.Errorf("logoutUser (text/plain): %+v", res)
	}

	// A header parameter.
	if res := call(t, ns, "deletePet", `{"petId": 2, "api_key": "special-key"}`); res.IsError {
		t.Errorf("deletePet: %s", text(res))
	}
	if r := rec.last(t); r.Header.Get("api_key") != "special-key" || r.Method != "DELETE" {
		t.Errorf("deletePet sent %s api_key %q", r.Method, r.Header.Get("api_key"))
	}

	// A 404 is an error result naming the status, with the problem body.
	res = call(t, ns, "getPetById", `{"petId": 2}`)
	if !res.IsError || !strings.Contains(text(res), "404 Not Found") || !strings.Contains(text(res), "Pet not found") || res.StructuredContent != nil {
		t.Errorf("getPetById of a deleted pet: %+v", res)
	}

	// Arguments the tool does not take are refused before any request.
	before := rec.count()
	for args, want := range map[string]string{
		`{"petId": 1, "petid": 2}`: `unknown argument "petid"`,
		`{}`:                       `missing argument "petId"`,
	} {
		if res := call(t, ns, "getPetById", args); !res.IsError || !strings.Contains(text(res), want) {
			t.Errorf("getPetById(%s): %+v, want an error with %q", args, res, want)
		}
	}
	if _, err := ns.CallTool(t.Context(), callOf("getPetById", `[1]`)); err == nil {
		t.Error("arguments that are not an object: no error")
	}
	if _, err := ns.CallTool(t.Context(), callOf("nope", `{}`)); err == nil {
		t.Error("an unknown tool: no error")
	}
	if rec.count() != before {
		t.Errorf("refused calls reached the service")
	}
}

// Operations selects tools by operationId and tag; an unknown one fails
// Open with the closest name.
func TestOperationsSelection(t *testing.T) {
	cfg := petstoreConfig("http://127.0.0.1:1")
	cfg.Operations = []string{"getPetById", "tag:store"}
	ts := tools(t, open(t, cfg))
	got := slices.Sorted(mapsKeys(ts))
	if want := []string{"deleteOrder", "getInventory", "getOrderById", "getPetById", "placeOrder"}; !slices.Equal(got, want) {
		t.Errorf("tools %v, want %v", got, want)
	}
	for ops, want := range map[string]string{"getPetByID": `did you mean "getPetById"`, "tag:stor": `no tag "stor" (did you mean "store"?)`} {
		cfg.Operations = []string{ops}
		op, _ := openapi.New(cfg)
		_, err := op.Open(t.Context(), scope)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "server pets") {
			t.Errorf("operations %q: %v, want %q", ops, err, want)
		}
	}
}
