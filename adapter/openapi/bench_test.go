package openapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"mcpx.dev/mcpx/adapter"
	"mcpx.dev/mcpx/adapter/openapi"
)

// BenchmarkCall compares a tool call through the Namespace (arguments
// decoded, the request built, the answer made a result) with a direct
// request to the same petstore service, both over loopback with a warm
// connection. "ratio" times the two alternately and reports
// namespace/direct as x-direct.
func BenchmarkCall(b *testing.B) {
	srv := httptest.NewServer(newPetstore())
	defer srv.Close()
	client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	op, err := openapi.New(openapi.Config{Server: "pets", Spec: "testdata/petstore3.yaml", BaseURL: srv.URL + "/api/v3", HTTPClient: client})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ns, err := op.Open(ctx, adapter.Scope{Server: "pets"})
	if err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"petId": 1}`)
	viaNamespace := func() {
		res, err := ns.CallTool(ctx, adapter.Call{Name: "getPetById", Arguments: args})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
	direct := func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v3/pet/1", nil)
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var v map[string]any
		json.NewDecoder(resp.Body).Decode(&v)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			direct()
		}
	})
	b.Run("namespace", func(b *testing.B) {
		for b.Loop() {
			viaNamespace()
		}
	})
	b.Run("ratio", func(b *testing.B) {
		var d, n time.Duration
		for b.Loop() {
			t0 := time.Now()
			direct()
			t1 := time.Now()
			viaNamespace()
			n += time.Since(t1)
			d += t1.Sub(t0)
		}
		b.ReportMetric(float64(n)/float64(d), "x-direct")
	})
}
