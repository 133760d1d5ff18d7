package openapi_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"mcpx.dev/mcpx/openapi"
	"mcpx.dev/mcpx/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/broker.json from the generator")

const golden = "testdata/broker.json"

func brokerDoc(t *testing.T) []byte {
	t.Helper()
	doc, err := openapi.Broker(openapi.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// The document is valid OpenAPI 3.1 as kin-openapi reads it.
func TestBrokerValidates(t *testing.T) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(brokerDoc(t))
	if err != nil {
		t.Fatalf("loading: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Errorf("openapi = %q, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("validating: %v", err)
	}
}

// The validation above rejects a broken document (so its passing means
// something): a response without a description, a dangling $ref.
func TestBrokerValidationCatchesBreakage(t *testing.T) {
	for name, breakIt := range map[string]func(d map[string]any){
		"no description": func(d map[string]any) {
			op := d["paths"].(map[string]any)["/healthz"].(map[string]any)["get"].(map[string]any)
			delete(op["responses"].(map[string]any)["200"].(map[string]any), "description")
		},
		"dangling ref": func(d map[string]any) {
			delete(d["components"].(map[string]any)["schemas"].(map[string]any), "Health")
		},
	} {
		t.Run(name, func(t *testing.T) {
			var d map[string]any
			if err := json.Unmarshal(brokerDoc(t), &d); err != nil {
				t.Fatal(err)
			}
			breakIt(d)
			b, _ := json.Marshal(d)
			doc, err := openapi3.NewLoader().LoadFromData(b)
			if err == nil {
				err = doc.Validate(context.Background())
			}
			if err == nil {
				t.Error("the broken document validates")
			}
		})
	}
}

func TestBrokerGolden(t *testing.T) {
	got := brokerDoc(t)
	if again := brokerDoc(t); string(again) != string(got) {
		t.Fatal("two runs gave different documents")
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./openapi -update to write it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("the document differs from %s; if the change is meant, run go test ./openapi -update and review the diff", golden)
	}
}

// Every member of every wire document type (reached from the routes'
// request and response types and the events' payloads) is a property of its
// component, and a member written always is required: a field added to a
// wire type shows up in the document.
func TestDocumentTypesInSchemas(t *testing.T) {
	var d struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
				Required   []string       `json:"required"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(brokerDoc(t), &d); err != nil {
		t.Fatal(err)
	}
	seen := map[reflect.Type]bool{}
	var visit func(reflect.Type)
	visit = func(rt reflect.Type) {
		for rt.Kind() == reflect.Pointer || rt.Kind() == reflect.Slice || rt.Kind() == reflect.Map {
			rt = rt.Elem()
		}
		if rt.Kind() != reflect.Struct || rt.PkgPath() != reflect.TypeFor[wire.Route]().PkgPath() || seen[rt] {
			return
		}
		seen[rt] = true
		s, ok := d.Components.Schemas[rt.Name()]
		if !ok {
			t.Errorf("no component for %s", rt)
			return
		}
		for _, f := range reflect.VisibleFields(rt) {
			tag := f.Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous || !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if _, ok := s.Properties[name]; !ok {
				t.Errorf("%s.%s: member %q missing from the schema", rt.Name(), f.Name, name)
			}
			optional := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
			if slices.Contains(s.Required, name) == optional {
				t.Errorf("%s.%s: required = %v, want %v", rt.Name(), f.Name, !optional, !optional)
			}
			visit(f.Type)
		}
	}
	for _, rt := range wire.Routes() {
		if rt.Request != nil {
			visit(rt.Request)
		}
		if rt.Response != nil {
			visit(rt.Response)
		}
	}
	for _, e := range wire.CallStreamEvents() {
		visit(e.Payload)
	}
	for _, want := range []string{"Whoami", "Caller", "DeclaredCtx", "DaemonInfo", "InstanceList", "Instance", "Stats", "Problem", "Progress", "ToolList"} {
		if !seen[typeByName(want)] {
			t.Errorf("%s not reached from the routes", want)
		}
	}
}

func typeByName(name string) reflect.Type {
	for _, v := range []any{wire.Whoami{}, wire.Caller{}, wire.DeclaredCtx{}, wire.DaemonInfo{}, wire.InstanceList{},
		wire.Instance{}, wire.Stats{}, wire.Problem{}, wire.Progress{}, wire.ToolList{}} {
		if rt := reflect.TypeOf(v); rt.Name() == name {
			return rt
		}
	}
	return nil
}

// Every operation but /healthz lists the Mcpx-Client header the network
// listeners require, and every route that reads the caller-context headers
// lists each of them: a client generated from the document can send them.
func TestHeaderParameters(t *testing.T) {
	var d struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
			Parameters  []struct {
				Ref string `json:"$ref"`
			} `json:"parameters"`
		} `json:"paths"`
		Components struct {
			Parameters map[string]struct {
				Name string `json:"name"`
				In   string `json:"in"`
			} `json:"parameters"`
		} `json:"components"`
	}
	if err := json.Unmarshal(brokerDoc(t), &d); err != nil {
		t.Fatal(err)
	}
	if p := d.Components.Parameters[wire.HeaderClient]; p.Name != wire.HeaderClient || p.In != "header" {
		t.Fatalf("components.parameters[%s] = %+v, want a header parameter", wire.HeaderClient, p)
	}
	ops := 0
	for _, rt := range wire.Routes() {
		op, ok := d.Paths[rt.Pattern][strings.ToLower(rt.Method)]
		if !ok {
			t.Errorf("%s %s: no operation", rt.Method, rt.Pattern)
			continue
		}
		ops++
		var refs []string
		for _, p := range op.Parameters {
			refs = append(refs, strings.TrimPrefix(p.Ref, "#/components/parameters/"))
		}
		want := []string{}
		if rt.Name != wire.OpHealthz {
			want = append(want, wire.HeaderClient)
		}
		if rt.Caller {
			for _, h := range wire.CallerHeaders() {
				want = append(want, h.Name)
			}
		}
		for _, h := range want {
			if !slices.Contains(refs, h) {
				t.Errorf("%s (%s %s) does not list the %s header", op.OperationID, rt.Method, rt.Pattern, h)
			}
		}
		if rt.Name == wire.OpHealthz && slices.Contains(refs, wire.HeaderClient) {
			t.Errorf("/healthz lists %s, which it does not require", wire.HeaderClient)
		}
	}
	if ops < 10 {
		t.Errorf("only %d operations checked", ops)
	}
}
