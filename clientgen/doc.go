// Package clientgen turns MCP tool schemas into TypeScript.
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
// (server-everything -> serverEverything). Only ASCII letters and digits are
// kept; a non-ASCII letter becomes U<hex> (café -> CafUE9); a leading digit
// gets a "_" prefix and a reserved word a "_" suffix (delete -> delete_).
// Names that collide after cleaning get _2, _3, … in the sorted order of
// the original names.
//
// # Determinism
//
// The output depends only on the set of tools: they are sorted by server
// and name first, and every other order (members, $defs) is the schema's.
//
// TODO(2026-11-30, issue 9 "Generated TypeScript script clients"): the
// client module (GET /v1/clients/typescript, mcpx clientgen ts), mcpx types
// with instructions and preludes, the budgeted catalog and search are built
// on this compiler next.
package clientgen
