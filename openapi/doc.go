// Package openapi generates the OpenAPI 3.1 document of the broker's own API
// from its contract, package wire: one operation per route of
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
//     (wire.CallStreamEvents) and their data's schemas in x-mcpx-events;
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
// # Tool documents
//
// ServerDocument and CombinedDocument describe the tools of one server, or
// of every server a caller may use, as operations of the broker: one
// POST /v1/servers/{server}/tools/{tool} per tool (tools.go), with
//
//   - the request body typed by the tool's inputSchema, carried over
//     faithfully (schema.go: JSON Schema 2020-12 is OpenAPI 3.1's dialect;
//     the locations $refs point to become components named
//     <operationId>.input[.<location>], recursive and root references
//     included; older drafts are translated with the same meaning);
//   - the 200 answer the MCP CallToolResult, its structuredContent typed by
//     the tool's outputSchema when it has one, and the event stream and
//     problem answers of callTool;
//   - the tool's annotations in x-mcp-annotations (and as hints in its
//     description), its name in x-mcp-tool, its server in x-mcpx-server;
//     the server's description and instructions in its tag (and
//     x-mcp-instructions);
//   - operationIds <server>.<tool>, unique and stable (cleanIDs): names of
//     letters, digits, "-" and "_" stay as they are, others are cleaned,
//     and a cleaned name another name also yields gets a hash of the
//     original.
//
// A tool whose schema cannot be carried over — invalid JSON Schema (a real
// validator compiles it against its draft's metaschema), an outputSchema
// whose type is not "object", a $ref that does not resolve inside the
// schema, a dynamic reference — gets a permissive operation for that part
// (any JSON object; an untyped structuredContent), with the reason in
// x-mcpx-schema-error. It never fails the document or hides another tool.
// Tools that cannot be operations at all (no name, a duplicate) are listed
// in x-mcpx-skipped-tools, and servers whose tools could not be listed in
// x-mcpx-unavailable.
//
// A Cache builds each document once per tool list (keyed by a hash of
// everything it is built from) and gives it a strong ETag; package api
// serves them at /v1/servers/{server}/openapi.json and /v1/openapi.json,
// from the listing of the caller's own scope and servers.
//
//	docs := openapi.NewCache(openapi.Options{Version: version}, 0)
//	doc, err := docs.Server(openapi.Server{Name: "demo", Tools: tools})
package openapi
