// Package openapi generates the OpenAPI 3.1 document of the broker's own API
// from its contract, package api/wire: one operation per route of
// wire.Routes (its Name is the operationId), with
//
//   - path and query parameters from the route's pattern and Query, and the
//     Mcpx-* caller-context headers (wire.CallerHeaders, shared as
//     components/parameters) on the routes that read them;
//   - request and response schemas reflected from the route's Go types
//     (reflect.go: every named struct is one component, optionality and
//     nullability follow the json options); routes that pass a child's
//     result through (Route.Raw) answer with the MCP type Route.MCPResult
//     names, and a wire document's json.RawMessage member with the MCP type
//     its `mcp` tag names, both from the MCP specification's schema.ts
//     transcribed in mcp.json;
//   - the text/event-stream answer of streaming routes, its events
//     (wire.Events) and their data's schemas in x-mcpx-events;
//   - one application/problem+json response per status the route's problem
//     kinds answer with, its type narrowed to those kinds' URIs (every route
//     also answers method-not-allowed and, over TCP, unauthorized);
//   - the security schemes: the bearer token of loopback TCP, with the
//     unix socket's peer credentials (no header: the empty requirement) and
//     the tailnet identity described in x-mcpx-authentication.
//
// The document is deterministic: the same route table gives the same bytes
// (testdata/broker.json is the golden copy; go test -update rewrites it).
// The daemon serves it at /openapi.json, built once; `mcpx openapi` prints
// it.
//
//	doc, err := openapi.Broker(openapi.Options{Version: version})
//
// TODO(2026-11-30, issue 8 "The API as a contract"): per-server documents
// (one operation per tool, typed by its inputSchema and outputSchema) and
// the combined document of every server a caller may use are not built yet.
package openapi
