// Package registry reads an MCP registry (the API of
// modelcontextprotocol/registry, the official one at
// https://registry.modelcontextprotocol.io) and turns a server's server.json
// into a pinned mcpx config entry.
//
//	c := &registry.Client{BaseURL: cfg.Registry.BaseURL()}
//	list, err := c.List(ctx, registry.ListOptions{Search: "filesystem"})
//	res, err := registry.Add(ctx, registry.AddOptions{
//		Client: c, Name: "io.github.example/weather", Config: path, StateDir: state,
//		Values: map[string]string{"API_KEY": key},
//	})
//	// res.Entry is now servers.weather in path
//
// # The API
//
// The client follows the registry's published OpenAPI document, version
// "2025-12-01" (docs/reference/api/openapi.yaml): GET /v0.1/servers (search,
// cursor, limit, version), GET /v0.1/servers/{serverName}/versions and GET
// /v0.1/servers/{serverName}/versions/{version} ("latest" for the latest),
// each answering ServerResponse objects ({"server": server.json, "_meta":
// the registry's own}). Server names and versions are escaped as one path
// segment each ("io.github.a%2Fb").
//
// # Entries
//
// Add writes the entry under the name's last segment ("weather" of
// "io.github.example/weather") unless AddOptions.As names it, with the
// version in it, never "latest":
//
//   - npm: installed once with npm into <state>/registry/npm/<id>@<version>;
//     the entry runs the package's bin with node (no npx and no network per
//     start, the "resolve once, run many" rule of nix: commands).
//   - pypi: uvx <id>==<version>; oci: docker run -i --rm <image>:<version>;
//     nuget: dnx <id>@<version> --yes. The launcher must be on the daemon's
//     PATH; Add warns when it is not here, and the pool names it (and how to
//     get it) when a start fails for want of it.
//   - nix (an mcpx extension; the official registry has no such type): the
//     identifier is a flake reference, run as the command nix:<identifier>
//     and resolved by package nixresolve.
//   - mcpb: refused (mcpx does not unpack bundles).
//   - a remote: a url server (streamable-http). An sse remote is refused:
//     mcpx speaks streamable HTTP only.
//
// A package's environmentVariables become the entry's env (for oci, passed
// into the container with docker -e NAME), its packageArguments (and
// runtimeArguments, for the launcher) its args, a remote's headers its
// headers. A value the server.json fixes is written as it is ({var}s
// substituted); any other comes from AddOptions.Values by name (the
// variable's name, a header's name, a positional argument's valueHint, a
// named argument's name without its dashes), else from Prompt for a
// required one, else its default; a required one with none of these is an
// error naming every one missing. A config file that receives a secret is
// made 0600.
package registry
