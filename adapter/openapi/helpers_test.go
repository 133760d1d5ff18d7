package openapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"mcpx.dev/mcpx/adapter"
	"mcpx.dev/mcpx/adapter/openapi"
)

// recorded is one request as the service saw it on the wire.
type recorded struct {
	Method     string
	RequestURI string // the raw path and query, as sent
	Header     http.Header
	Body       string
}

// recorder wraps a handler, keeping every request it serves.
type recorder struct {
	mu   sync.Mutex
	reqs []recorded
}

func (rec *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, recorded{r.Method, r.RequestURI, r.Header.Clone(), string(b)})
		rec.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		h.ServeHTTP(w, r)
	})
}

// last is the last request served.
func (rec *recorder) last(t *testing.T) recorded {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) == 0 {
		t.Fatal("the service saw no request")
	}
	return rec.reqs[len(rec.reqs)-1]
}

func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.reqs)
}

// open opens cfg's namespace, failing t on an error.
func open(t *testing.T, cfg openapi.Config) adapter.Namespace {
	t.Helper()
	op, err := openapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := op.Open(t.Context(), adapter.Scope{Server: cfg.Server})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}

// tools lists ns's tools by name.
func tools(t *testing.T, ns adapter.Namespace) map[string]adapter.Tool {
	t.Helper()
	list, err := ns.ListTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]adapter.Tool{}
	for _, tool := range list {
		if _, dup := out[tool.Name]; dup {
			t.Fatalf("tool %s listed twice", tool.Name)
		}
		out[tool.Name] = tool
	}
	return out
}

// call calls a tool, failing t on a protocol error.
func call(t *testing.T, ns adapter.Namespace, name, args string) *adapter.Result {
	t.Helper()
	res, err := ns.CallTool(t.Context(), adapter.Call{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s(%s): %v", name, args, err)
	}
	return res
}

func text(res *adapter.Result) string {
	var b strings.Builder
	for _, c := range res.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// compileSchema compiles a tool's schema as JSON Schema 2020-12 (refusing
// an unresolved $ref or an invalid schema) and returns its validator.
func compileSchema(t *testing.T, name string, schema json.RawMessage) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(schema)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	loc := "mem:///" + name + ".json"
	if err := c.AddResource(loc, doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	s, err := c.Compile(loc)
	if err != nil {
		t.Fatalf("%s: compiling %s: %v", name, schema, err)
	}
	return s
}

// valid reports whether instance (JSON) is valid against s.
func valid(t *testing.T, s *jsonschema.Schema, instance string) bool {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(instance))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v) == nil
}

// serve starts an httptest server on loopback for h, recorded.
func serve(t *testing.T, h http.Handler) (*httptest.Server, *recorder) {
	t.Helper()
	rec := &recorder{}
	srv := httptest.NewServer(rec.wrap(h))
	t.Cleanup(srv.Close)
	return srv, rec
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

var scope = adapter.Scope{Server: "pets"}

func callOf(name, args string) adapter.Call {
	return adapter.Call{Name: name, Arguments: json.RawMessage(args)}
}
