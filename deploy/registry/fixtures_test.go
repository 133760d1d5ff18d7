package registry_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/registrytest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

const everythingPkg = "@modelcontextprotocol/server-everything"

// everythingVersion is the version testdata/npm pins.
func everythingVersion(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "testdata", "npm", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Dependencies map[string]string }
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	v := p.Dependencies[everythingPkg]
	if v == "" {
		t.Fatalf("testdata/npm/package.json pins no %s", everythingPkg)
	}
	return v
}

func everything(version string) registrytest.Server {
	return registrytest.Server{Latest: true, JSON: strings.ReplaceAll(`{
		"$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
		"name": "io.github.modelcontextprotocol/server-everything",
		"title": "Everything",
		"description": "MCP server that exercises all the features of the MCP protocol",
		"version": "VERSION",
		"repository": {"url": "https://github.com/modelcontextprotocol/servers", "source": "github", "subfolder": "src/everything"},
		"packages": [{
			"registryType": "npm", "registryBaseUrl": "https://registry.npmjs.org",
			"identifier": "@modelcontextprotocol/server-everything", "version": "VERSION",
			"runtimeHint": "npx", "transport": {"type": "stdio"},
			"packageArguments": [{"type": "positional", "value": "stdio"}]
		}]
	}`, "VERSION", version)}
}

// remote is a streamable-HTTP remote at base/mcp, with a bearer token.
func remote(base string) registrytest.Server {
	return registrytest.Server{Latest: true, JSON: strings.ReplaceAll(`{
		"name": "com.example/remote-demo",
		"description": "The demo server, remote",
		"version": "2.0.0",
		"remotes": [
			{"type": "sse", "url": "BASE/sse"},
			{"type": "streamable-http", "url": "BASE/{path}",
			 "variables": {"path": {"description": "the endpoint's path", "default": "mcp"}},
			 "headers": [{"name": "Authorization", "value": "Bearer {token}", "isRequired": true,
			   "variables": {"token": {"description": "your API token", "isRequired": true, "isSecret": true}}}]}
		]
	}`, "BASE", base)}
}

var weather = registrytest.Server{Latest: true, JSON: `{
	"name": "io.example/weather",
	"description": "Forecasts from the example weather service",
	"version": "1.2.0",
	"packages": [{
		"registryType": "pypi", "identifier": "mcp-weather", "version": "1.2.0", "runtimeHint": "uvx",
		"transport": {"type": "stdio"},
		"runtimeArguments": [{"type": "named", "name": "--python", "value": "3.12"}],
		"packageArguments": [
			{"type": "named", "name": "--units", "default": "metric", "choices": ["metric", "imperial"]},
			{"type": "positional", "valueHint": "cache_dir", "isRequired": true, "description": "where forecasts are kept"}
		],
		"environmentVariables": [
			{"name": "WEATHER_API_KEY", "isRequired": true, "isSecret": true, "description": "the service's key"},
			{"name": "WEATHER_REGION", "default": "eu"},
			{"name": "WEATHER_DEBUG", "description": "optional, left out"}
		]
	}]
}`}

// weatherOld is an older version of weather, not the latest.
var weatherOld = registrytest.Server{JSON: strings.ReplaceAll(weather.JSON, "1.2.0", "1.1.0")}

var fetchOCI = registrytest.Server{Latest: true, JSON: `{
	"name": "io.example/fetch",
	"description": "Fetches URLs, in a container",
	"version": "0.3.1",
	"packages": [{
		"registryType": "oci", "identifier": "docker.io/example/fetch", "version": "0.3.1",
		"transport": {"type": "stdio"},
		"runtimeArguments": [{"type": "named", "name": "--network", "value": "bridge"}],
		"environmentVariables": [{"name": "FETCH_TOKEN", "isRequired": true, "isSecret": true}]
	}]
}`}

var nugetServer = registrytest.Server{Latest: true, JSON: `{
	"name": "io.example/dotnet-tools",
	"description": "A .NET tool",
	"version": "0.9.0",
	"packages": [{
		"registryType": "nuget", "identifier": "Example.Mcp.Tools", "version": "0.9.0",
		"transport": {"type": "stdio"},
		"packageArguments": [{"type": "positional", "value": "serve"}]
	}]
}`}

var nixServer = registrytest.Server{Latest: true, JSON: `{
	"name": "io.example/nix-tool",
	"description": "A server in a flake",
	"version": "1.0.0",
	"packages": [{"registryType": "nix", "identifier": "github:example/tool/v1.0.0#mcp", "version": "1.0.0", "transport": {"type": "stdio"}}]
}`}

var bundleOnly = registrytest.Server{Latest: true, JSON: `{
	"name": "io.example/bundle",
	"description": "Only a bundle",
	"version": "1.0.0",
	"packages": [{"registryType": "mcpb", "identifier": "https://example.com/b.mcpb", "version": "1.0.0",
		"fileSha256": "fe333e598595000ae021bd27117db32ec69af6987f507ba7a63c90638ff633ce", "transport": {"type": "stdio"}}]
}`}
