// Package clientgen turns MCP tool schemas into TypeScript: types, and the
// typed script client of a broker.
//
//	f, problems := clientgen.Compile([]clientgen.Tool{
//		{Server: "demo", Name: "echo", InputSchema: schema},
//	})
//	os.Stdout.Write(f.Source) // export namespace demo { export type EchoInput = {...}; ... }
//
// # Overview
//
// [Compile] writes one module with a namespace per server and, per tool, the
// types <Name>Input and <Name>Output (from inputSchema and outputSchema)
// and one named type per location a $ref points to (<Name>Input<Def>).
// JSON Schema maps to TypeScript as follows:
//
//   - type: string, number and integer (number), boolean, null, array,
//     object; a type array is a union. OpenAPI's nullable adds null.
//   - properties keep the schema's order; required ones are required
//     members, the rest optional. additionalProperties and
//     patternProperties become an index signature (whose type includes the
//     members', as TypeScript demands); additionalProperties: false closes
//     the object, and an object without properties is free-form. Without
//     properties or items, an object or array is inferred from the
//     keywords present.
//   - enum and const are unions of literal types (objects and arrays as
//     literal object and tuple types), filtered by type.
//   - anyOf and oneOf are unions; allOf is an intersection whose members
//     share the names required at their level (so a required list in one
//     member makes another member's property required), and names declared
//     behind a $ref member are intersected as { name: unknown }.
//   - prefixItems (or draft 7's array items) are tuple elements, optional
//     from minItems on; items (or additionalItems) is the rest, and
//     items: false closes the tuple.
//   - $ref to #, #/$defs/…, #/definitions/… or any JSON Pointer in the same
//     schema is a named type, so recursion of any depth, direct or mutual,
//     is a recursive type. A $ref with sibling keywords (a root $ref with
//     properties beside it, for one) is the intersection of both.
//   - title, description, format, default and deprecated become JSDoc.
//
// A part that cannot be expressed becomes `unknown` with a comment saying
// why, never a wrong type: a $ref outside the schema, an anchor, a
// $dynamicRef, an unknown type name, a number beyond float64, invalid JSON,
// and a cycle of references with no object or array in between (which
// TypeScript refuses and which has no finite meaning). Those are reported as
// [Problem]s; one tool's problems never stop another tool's types. Keywords
// that narrow a type in ways TypeScript cannot say (not, if, contains,
// propertyNames, …) are left out with a comment, which only loosens the
// type; bounds, lengths and patterns are left out silently.
//
// # Identifiers
//
// Tool names become PascalCase type names (take-screenshot ->
// TakeScreenshotInput), server names camelCase namespaces
// (server-everything -> serverEverything). Letters and digits an
// ECMAScript identifier may hold (Unicode ID_Continue) are kept, so 日本
// and café stay; another non-ASCII character becomes U<hex>; a leading
// non-letter gets a "_" prefix and a reserved word a "_" suffix (delete ->
// delete_). When names clean to the same identifier, a name that is
// exactly it takes it (the tool getItem is getItem beside get-item), and
// each other gets it with "_" and a hash of its own name (getItem_48f24a),
// with a Problem (Schema "name") and a doc comment saying so: what a tool
// is called never depends on which other tools exist, except that an exact
// name arriving takes its identifier back.
//
// # Determinism
//
// The output depends only on the set of tools: they are sorted by server
// and name first, and every other order (members, $defs) is the schema's.
//
// # The client module
//
// [Client] writes a script client: one self-contained ES module (TypeScript,
// fetch, no imports) that the daemon serves at GET /v1/clients/typescript and
// `mcpx clientgen ts` writes. Per server it exports an object with one typed
// async function per tool, named like a value (take-screenshot ->
// takeScreenshot), taking the tool's <Name>Input and call options and
// returning the child's CallToolResult, whose structuredContent is typed
// <Name>Output where the tool declares an outputSchema of "type":
// "object" (MCP makes structuredContent an object; another outputSchema is
// declared but not used, with a Problem, as the OpenAPI document flags it:
// internal/toolschema's rule). The args parameter is optional only when {}
// is valid: no property is required, at the top or through a root $ref,
// allOf, or every anyOf or oneOf branch. The module type-checks under
// --strict --exactOptionalPropertyTypes with any lib (it types the few web
// APIs it uses itself):
//
//	import { demo, log, McpxError } from "./mcpx-client.ts";
//	const res = await demo.add({ a: 1, b: 2 }); // res.structuredContent?.sum: number
//
// The module declares the caller context itself (Mcpx-Cwd from Deno.cwd()
// or process.cwd(), $MCPX_SESSION_ID, $MCPX_PARENT_SESSION_ID, $MCPX_LEASE,
// $MCPX_SCOPE) and finds the broker: $MCPX_URL and $MCPX_TOKEN, else the local daemon's record
// (daemon.json in $XDG_STATE_HOME/mcpx or ~/.local/state/mcpx; its token is
// sent only to its own address). Call options override each of these, and
// add a progress callback (the call is then streamed as server-sent
// events), an AbortSignal (aborting closes the request, so the broker
// cancels the child's call) and a timeout. Every failure throws an
// McpxError carrying the problem document's fields and its kind; a
// not-found for a generated function says the client may be stale and
// names the tool. log.info and friends write JSON records to stderr, so a
// script's output and its logging never mix.
//
// Beside the tools, the runtime reads resources: readResource(server, uri)
// answers the child's ReadResourceResult unchanged (a blob stays base64),
// and subscribeResource(server, uri) is an async iterator of the child's
// updates of the resource (GET /v1/servers/{server}/resources/subscribe):
// leaving the loop, or aborting its signal, unsubscribes; when the
// server's instance stops it throws an McpxError of kind "unavailable".
//
//	for await (const u of subscribeResource("everything", uri)) console.log(u.uri);
//
// The header names the broker and, per server, the tool list the module
// was generated from (tool count and a fingerprint), and the servers left
// out because their list failed.
//
// The module uses only erasable TypeScript (checked with tsc
// --erasableSyntaxOnly): Deno, Bun, and Node 22.18 or newer run it as it
// is; Node 20 runs it after tsc transpiles it. The header names, media
// types, event names and problem types in its runtime (runtime/*.ts) are
// filled from wire when it is generated. The runtime's private names
// contain a "$", which no generated name has, and a server named after one
// of its public names or the globals it uses gets a "_2" suffix.
//
// # Declarations, instructions and preludes
//
// [Types] writes the declarations of one server's tools, or of one tool,
// for an agent to read before it writes a script (`mcpx types demo.echo`,
// GET /v1/types): the types of Compile in the server's namespace. A
// [Server] says what the file says about the server beside its tools, in
// the declarations and in the client module alike: its instructions (the
// initialize result's, which say how to use its tools as a whole) are the
// doc comment of its namespace and of its client object, and the config's
// prelude (what the tools' descriptions omit, such as how to obtain an id)
// is written before the namespace as // lines, so nothing in it can end a
// comment. A server with neither has no comment at all.
//
// # Stale clients
//
// Each generated function sends, with every call, the hash of its tool's
// schemas as they were when the module was generated (header
// Mcpx-Tool-Hash, wire.ToolHash: inputSchema and outputSchema, compacted;
// a description may change freely). The broker compares it with the tool
// the child in the caller's scope lists now and refuses a difference with a
// 409 stale-client problem before the child sees the call; the client
// throws it as an McpxError naming the tool and the tool list it was
// generated from. A tool that is gone is a 404 whose message says the same.
// The untyped callTool sends no hash.
package clientgen
