package api

import "net/http"

// Route describes one endpoint. The router and the OpenAPI generator both
// read the same table (Routes), so an endpoint exists in one place only.
type Route struct {
	Method  string // HTTP method
	Pattern string // chi pattern: "/v1/servers/{server}"; path parameters in braces
	Name    string // operationId: stable, camelCase
	Summary string // one line, for docs and `mcpx help`-style listings
	// Caller is true if the endpoint reads the caller-context headers
	// (HeaderCwd, HeaderSession, HeaderParentSession, HeaderLease, HeaderPid).
	Caller bool
	// Body is the request body: "" none, BodyArguments or BodyPromptArguments.
	Body string
	// Query lists the query parameters the endpoint reads (all required).
	Query []string
	// Stream is true if the endpoint also answers Accept: text/event-stream.
	Stream bool
	// Raw is true if the success body is the child's MCP result bytes, passed
	// through unchanged, rather than a document of this API's own.
	Raw bool
}

// Request body kinds for Route.Body.
const (
	BodyArguments       = "arguments"        // a JSON object: tool arguments; empty body = {}
	BodyPromptArguments = "prompt-arguments" // a JSON object of string values; empty body = {}
)

// route is a Route plus its handler. Handlers return an error instead of
// writing one, so every failure goes through writeProblem.
type route struct {
	Route
	handle func(s *server, w http.ResponseWriter, r *http.Request) error
}

// routes is the API. Keep it sorted by path; order does not matter to chi.
var routes = []route{
	{Route{Method: "GET", Pattern: "/healthz", Name: "healthz",
		Summary: "Report that the daemon is serving"}, (*server).healthz},
	{Route{Method: "GET", Pattern: "/v1/whoami", Name: "whoami", Caller: true,
		Summary: "Show how the broker sees the caller: identity, rights and declared context"}, (*server).whoami},

	{Route{Method: "GET", Pattern: "/v1/servers", Name: "listServers",
		Summary: "List the configured servers"}, (*server).listServers},
	{Route{Method: "GET", Pattern: "/v1/servers/{server}", Name: "getServer",
		Summary: "Describe one configured server"}, (*server).getServer},
	{Route{Method: "GET", Pattern: "/v1/servers/{server}/tools", Name: "listServerTools", Caller: true,
		Summary: "List one server's tools, as the child in the caller's scope lists them"}, (*server).listServerTools},
	{Route{Method: "POST", Pattern: "/v1/servers/{server}/tools/{tool}", Name: "callTool", Caller: true,
		Body: BodyArguments, Stream: true, Raw: true,
		Summary: "Call a tool; the result is the child's CallToolResult, or an event stream of progress then the result"}, (*server).callTool},
	{Route{Method: "GET", Pattern: "/v1/servers/{server}/resources", Name: "listResources", Caller: true,
		Summary: "List one server's resources"}, (*server).listResources},
	{Route{Method: "GET", Pattern: "/v1/servers/{server}/resources/read", Name: "readResource", Caller: true,
		Query: []string{"uri"}, Raw: true,
		Summary: "Read one resource; the result is the child's ReadResourceResult"}, (*server).readResource},
	{Route{Method: "GET", Pattern: "/v1/servers/{server}/prompts", Name: "listPrompts", Caller: true,
		Summary: "List one server's prompts"}, (*server).listPrompts},
	{Route{Method: "POST", Pattern: "/v1/servers/{server}/prompts/{prompt}", Name: "getPrompt", Caller: true,
		Body: BodyPromptArguments, Raw: true,
		Summary: "Get a prompt with arguments; the result is the child's GetPromptResult"}, (*server).getPrompt},

	{Route{Method: "GET", Pattern: "/v1/tools", Name: "listTools", Caller: true,
		Summary: "List every server's tools, each tagged with its server; failing servers are reported, not fatal"}, (*server).listTools},

	{Route{Method: "GET", Pattern: "/v1/instances", Name: "listInstances",
		Summary: "List the pooled child instances"}, (*server).listInstances},
	{Route{Method: "DELETE", Pattern: "/v1/instances/{id}", Name: "stopInstance",
		Summary: "Stop one instance after draining its calls"}, (*server).stopInstance},
}

// Routes returns the API's route table, in a stable order. The caller owns
// the returned slice.
func Routes() []Route {
	out := make([]Route, len(routes))
	for i, rt := range routes {
		out[i] = rt.Route
		out[i].Query = append([]string(nil), rt.Query...)
	}
	return out
}
