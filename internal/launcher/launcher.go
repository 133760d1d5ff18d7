// Package launcher says how to get the commands that run packaged MCP
// servers (uvx, docker, dnx, node), for the error of a server whose
// command is missing (package pool) and the warning of `mcpx registry add`
// (package registry), which write such entries.
//
//	launcher.Hint("uvx") // "uvx comes with uv (https://…)"
//
// A leaf: the standard library only.
package launcher

// Hint says how to get the launcher called name, or "" for a command that
// is no launcher this package knows.
func Hint(name string) string {
	switch name {
	case "uvx", "uv":
		return name + " comes with uv: install uv (https://docs.astral.sh/uv/getting-started/installation/)"
	case "docker":
		return "install Docker (https://docs.docker.com/get-docker/), or a compatible CLI installed as docker"
	case "dnx":
		return "dnx comes with the .NET 10 SDK (https://dotnet.microsoft.com/download)"
	case "node", "npm", "npx":
		return name + " comes with Node.js (https://nodejs.org)"
	}
	return ""
}
