// Package catalog is compact views of many MCP tools for an agent's
// context: search by terms, and a catalog of signatures within a budget of
// tokens, both computed from the servers' tool lists.
//
//	hits, match := catalog.Search(tools, []string{"screenshto"}, catalog.SearchOptions{})
//	// hits[0].Name == "take_screenshot", match == catalog.MatchTypo
//	fmt.Print(catalog.New(tools, 60, []string{"file"})) // the filesystem server's tools:
//	// filesystem: 14 tools, 4 shown
//	//
//	// filesystem.get_file_info({path: string})
//	// filesystem.read_media_file({path: string})
//	// filesystem.read_multiple_files({paths: string[]})
//	// filesystem.write_file({path: string, content: string})
//
// The API serves them (GET /v1/tools?q=, GET /v1/catalog); the MCP
// endpoint's code mode will too. Neither needs the TypeScript generator
// (package clientgen): a signature reads only the top-level properties of
// a tool's input schema, through package internal/orderedjson, with which
// clientgen decodes schemas too, so that both keep the order the schema's
// author gave the properties. Which properties there are and which are
// required is read through a root $ref, allOf, anyOf and oneOf by
// internal/toolschema, the rule the client's optional args follow too: a
// tool that needs arguments never shows as tool().
//
// # Search
//
// [Search] scores each term against a tool (exact name 100, prefix 60, tag
// 50, contains 40, a split or stemmed word of the name 40, the path
// server.tool 30, the server 20, a word of the description 10); hits must
// match every term, else any, else are found by typo tolerance, and each
// hit explains what every term contributed.
//
// # The catalog
//
// A [Catalog] lists every server with its tool count, whatever its budget,
// then one-line signatures (server.tool({path: string, depth?: number}))
// taken round-robin across servers, each server's cheapest first (or by
// search score against bias terms), until the budget (in tokens of four
// characters) is spent: a small server is never crowded out by a wide one.
// The result depends only on the set of tools.
package catalog

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"strings"
)

// Tool is one tool of one server, as search and the catalog read it.
type Tool struct {
	Server      string // the server it belongs to; "" for none
	Name        string
	Description string
	// Tags label the tool for Search (SearchOptions.Tags, and a term that
	// is a tag scores PointsTag).
	Tags []string
	// InputSchema is the tool's input schema, whose top-level properties
	// its signature shows.
	InputSchema json.RawMessage
}

// sortTools returns tools sorted by server, name, then content, so that
// the result does not depend on their order.
func sortTools(tools []Tool) []Tool {
	sorted := slices.Clone(tools)
	slices.SortStableFunc(sorted, func(a, b Tool) int {
		return cmp.Or(strings.Compare(a.Server, b.Server), strings.Compare(a.Name, b.Name),
			strings.Compare(a.Description, b.Description), bytes.Compare(a.InputSchema, b.InputSchema))
	})
	return sorted
}
