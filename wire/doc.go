// Package wire is the daemon's HTTP contract as data: the route table, the
// Mcpx-* headers, the problem documents errors are answered with, the JSON
// documents of the list, status and whoami routes, and the server-sent
// events of a streamed tool call. It holds no server and no client code, so
// that the server (package api), the Go client (client) and the
// generators of the OpenAPI document and other clients all read one
// description and cannot drift apart.
//
//	rt, _ := wire.Lookup(wire.OpCallTool)
//	req, _ := http.NewRequest(rt.Method, base+rt.Path("demo", "echo"), body)
//	req.Header.Set(wire.HeaderCwd, "/src/app")
//
// Nothing here may import the broker or anything that runs: a program that
// only speaks the protocol links this package and the standard library.
// See docs/architecture.md for the packages and what each may import.
package wire
