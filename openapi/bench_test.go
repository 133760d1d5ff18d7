package openapi_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"testing"

	"mcpx.dev/mcpx/openapi"
)

// servers500 is 500 tools over 10 servers, schemas like real servers' (the
// filesystem server's edit_file: nested objects in arrays, enums, defaults)
// plus a $defs reference, each with an outputSchema.
func servers500(b *testing.B) []openapi.Server {
	var out []openapi.Server
	for s := range 10 {
		var tools []map[string]any
		for i := range 50 {
			tools = append(tools, map[string]any{
				"name": fmt.Sprintf("tool-%d", i), "description": "Make line-based edits to a text file.",
				"inputSchema": json.RawMessage(`{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
					"definitions": {"edit": {"type": "object", "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}}, "required": ["oldText", "newText"]}},
					"properties": {"path": {"type": "string"}, "edits": {"type": "array", "items": {"$ref": "#/definitions/edit"}},
					"mode": {"enum": ["a", "b", "c"], "default": "a"}, "dryRun": {"type": "boolean", "default": false}}, "required": ["path", "edits"]}`),
				"outputSchema": json.RawMessage(`{"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"], "additionalProperties": false}`),
				"annotations":  map[string]any{"readOnlyHint": false, "destructiveHint": true},
			})
		}
		raw, err := json.Marshal(tools)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, openapi.Server{Name: fmt.Sprint("server", s), Tools: raw})
	}
	return out
}

// The combined document of 500 tools: a cold build, and a cached answer
// (which hashes the listing to find it).
func BenchmarkCombined500(b *testing.B) {
	servers := servers500(b)
	b.Run("cold", func(b *testing.B) {
		var size int
		for b.Loop() {
			doc, err := openapi.CombinedDocument(openapi.Options{}, servers)
			if err != nil {
				b.Fatal(err)
			}
			size = len(doc)
		}
		b.ReportMetric(float64(size), "doc-bytes")
		doc, _ := openapi.CombinedDocument(openapi.Options{}, servers)
		var gz bytes.Buffer
		w := gzip.NewWriter(&gz)
		w.Write(doc) //nolint:errcheck // a bytes.Buffer
		w.Close()    //nolint:errcheck // a bytes.Buffer
		b.ReportMetric(float64(gz.Len()), "gzip-bytes")
	})
	b.Run("cached", func(b *testing.B) {
		c := openapi.NewCache(openapi.Options{}, 0)
		if _, err := c.Combined(servers); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := c.Combined(servers); err != nil {
				b.Fatal(err)
			}
		}
		if c.Builds() != 1 {
			b.Fatalf("%d builds", c.Builds())
		}
	})
}
