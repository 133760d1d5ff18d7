package wire

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
)

// Route describes one endpoint. The server mounts exactly the routes of
// this table (package api has one handler per operation name, and a test
// fails if either side has one the other lacks); the Go client builds its
// requests from it.
//
// Request, Response, Status, Problems and MCPResult are read by no running
// code: they are the input of the OpenAPI generator (next issue), kept here
// so that the generated document describes the routes the server serves.
type Route struct {
	Method  string // HTTP method
	Pattern string // chi pattern: "/v1/servers/{server}"; path parameters in braces
	Name    string // operationId: stable, camelCase; one of the Op* constants
	Summary string // one line, for docs and `mcpx help`-style listings

	// Caller is true if the endpoint reads the caller-context headers
	// (HeaderCwd, HeaderSession, HeaderParentSession, HeaderLease, HeaderPid).
	Caller bool
	// Body is the request body's kind; BodyNone for none.
	Body BodyKind
	// Query lists the query parameters the endpoint reads (all required).
	Query []string
	// OptionalQuery lists the query parameters it reads that may be absent.
	OptionalQuery []string
	// Stream is true if the endpoint also answers Accept: text/event-stream,
	// with the events of CallStreamEvents.
	Stream bool
	// Raw is true if the success body is the child's MCP result bytes,
	// passed through unchanged, rather than a document of this API's own;
	// MCPResult names its MCP type.
	Raw bool
	// ETag is true if the success answer carries an ETag, and a request
	// whose If-None-Match names it is answered 304 Not Modified, no body.
	ETag bool

	// Request is the Go type of the request body; nil = no body.
	// (OpenAPI generator input.)
	Request reflect.Type
	// Response is the Go type of the success body: a document of this
	// package, or json.RawMessage for Raw routes; nil = no body (Status
	// 204). (OpenAPI generator input.)
	Response reflect.Type
	// MCPResult names the MCP schema type of a Raw route's body, as the MCP
	// specification's schema.ts spells it ("CallToolResult"); "" otherwise.
	// (OpenAPI generator input.)
	MCPResult string
	// Status is the success status: 200, or 204 for no body. (OpenAPI
	// generator input.)
	Status int
	// Accepted is the Go type of a 202 Accepted body: the handle a
	// request answers at once when it asks for the work to run on (a tool
	// call with ?task=true answers its Task); nil = never 202. (OpenAPI
	// generator input.)
	Accepted reflect.Type
	// Media is the success body's media type; "" = MediaJSON.
	Media string
	// Problems are the problem kinds (Kind* constants) the route may answer
	// with, besides KindMethodNotAllowed, which any route answers to a
	// method it does not serve. (OpenAPI generator input.)
	Problems []string
}

// BodyKind is the kind of a route's request body.
type BodyKind string

// Request body kinds for Route.Body.
const (
	BodyNone            BodyKind = ""
	BodyArguments       BodyKind = "arguments"        // a JSON object: tool arguments; empty body = {}
	BodyPromptArguments BodyKind = "prompt-arguments" // a JSON object of string values; empty body = {}
	BodyDocument        BodyKind = "document"         // a JSON document of this package (Route.Request); empty body = its zero value
)

// Operation names (Route.Name), which are also the OpenAPI operationIds.
const (
	OpHealthz         = "healthz"
	OpWhoami          = "whoami"
	OpListServers     = "listServers"
	OpGetServer       = "getServer"
	OpListServerTools = "listServerTools"
	OpCallTool        = "callTool"
	OpListResources   = "listResources"
	OpReadResource    = "readResource"
	OpListPrompts     = "listPrompts"
	OpGetPrompt       = "getPrompt"
	OpListTools       = "listTools"
	OpListInstances   = "listInstances"
	OpStopInstance    = "stopInstance"
	OpStopDaemon      = "stopDaemon"
	OpReloadDaemon    = "reloadDaemon"
	OpRestartServer   = "restartServer"
	OpGetSandbox      = "getSandbox"
	OpRefresh         = "refresh"
	OpUpgradeDaemon   = "upgradeDaemon"
	OpOpenAPI         = "getOpenAPI"
	OpTypeScript      = "getTypeScriptClient"
	OpTypes           = "getTypes"
	OpServerOpenAPI   = "getServerOpenAPI"
	OpToolsOpenAPI    = "getToolsOpenAPI"
	OpCatalog         = "getCatalog"
	OpListNix         = "listNix"
	OpRefreshNix      = "refreshNix"
	OpGCNix           = "gcNix"
	OpAcquireLease    = "acquireLease"
	OpRenewLease      = "renewLease"
	OpReleaseLease    = "releaseLease"
	OpListSessions    = "listSessions"
	OpGetSession      = "getSession"
	OpStopSession     = "stopSession"
	OpSetSession      = "setSession"
	OpCallStats       = "getCallStats"
	OpEvents          = "streamEvents"
	OpAnswerInput     = "answerInput"
	OpMetrics         = "getMetrics"
	OpLog             = "streamLog"
	OpListTasks       = "listTasks"
	OpGetTask         = "getTask"
	OpTaskResult      = "getTaskResult"
	OpCancelTask      = "cancelTask"
	OpListPins        = "listToolPins"
	OpApproveTools    = "approveTools"
	OpCallFeed        = "streamCalls"
	OpAuthLogin       = "authLogin"
	OpAuthCallback    = "authCallback"
	OpAuthStatus      = "authStatus"
	OpAuthLogout      = "authLogout"
	OpAuthRedirect    = "authRedirect"
)

// The problems routes share, by what the route does.
var (
	// Every route: the caller is refused, or the daemon has a bug.
	problemsAny = []string{KindForbidden, KindInternal}
	// Routes that read the caller-context headers: a bad Mcpx-Pid or cwd.
	problemsCaller = []string{KindBadRequest, KindForbidden, KindInternal}
	// Routes that talk to a child in the caller's scope.
	problemsChild = []string{KindBadRequest, KindNotFound, KindForbidden, KindChildFailed, KindTimeout,
		KindExhausted, KindUnavailable, KindCanceled, KindConfig, KindInternal, KindRateLimited, KindAuthRequired}
	// The same, with a request body.
	problemsChildBody = append(slices.Clip(problemsChild), KindTooLarge, KindBodyTimeout)
)

var (
	typeRaw = reflect.TypeFor[json.RawMessage]()
	// Tool arguments: any JSON object.
	typeArguments = reflect.TypeFor[map[string]any]()
	// Prompt arguments: a JSON object of strings.
	typePromptArguments = reflect.TypeFor[map[string]string]()
)

// routes is the API. Keep it sorted by path; order does not matter to chi.
var routes = []Route{
	{Method: "GET", Pattern: "/healthz", Name: OpHealthz,
		Summary:  "Report that the daemon is serving",
		Response: reflect.TypeFor[Health](), Status: 200, Problems: problemsAny},
	{Method: "GET", Pattern: "/metrics", Name: OpMetrics, Media: MediaMetrics,
		Summary:  "Prometheus metrics in the text exposition format: calls, latency, instances, lifecycle, pool, denials, nix, call log (admin or metrics)",
		Response: reflect.TypeFor[string](), Status: 200, Problems: problemsAny},
	{Method: "GET", Pattern: "/openapi.json", Name: OpOpenAPI,
		Summary:  "The broker's OpenAPI 3.1 document, generated from this route table",
		Response: typeRaw, Status: 200, Problems: problemsAny},
	{Method: "GET", Pattern: "/v1/whoami", Name: OpWhoami, Caller: true,
		Summary:  "Show how the broker sees the caller: identity, rights and declared context",
		Response: reflect.TypeFor[Whoami](), Status: 200, Problems: problemsCaller},

	{Method: "POST", Pattern: "/v1/calls/{call}/input", Name: OpAnswerInput, Body: BodyDocument,
		Summary: "Answer a child's request for input (elicitation, sampling) during a streamed call: only the call's caller may; a content that does not match the requested schema is a 400 naming the field, and may be sent again",
		Request: reflect.TypeFor[InputAnswer](), Status: 204,
		Problems: []string{KindBadRequest, KindNotFound, KindForbidden, KindTooLarge, KindBodyTimeout, KindInternal}},

	{Method: "GET", Pattern: "/v1/auth", Name: OpAuthStatus,
		Summary:  "The sign-ins of the url servers the caller may use: signed in, needing sign-in, issuer, scopes, expiry, refresh (docs/oauth.md); never a token",
		Response: reflect.TypeFor[AuthStatusList](), Status: 200, Problems: problemsAny},
	{Method: "GET", Pattern: "/v1/auth/redirect", Name: OpAuthRedirect, Media: MediaText,
		OptionalQuery: []string{QueryCode, QueryState, QueryIss, QueryError},
		Summary:       "Where a browser comes back from signing in at a url server's authorization server, for a caller asked to by URL-mode elicitation: the state names the sign-in, the code is exchanged; a short page says how it went. Loopback TCP only, with no identity and no Mcpx-Client (a browser's navigation sends neither): the state is the capability (docs/oauth.md)",
		Response:      reflect.TypeFor[string](), Status: 200, Problems: []string{KindBadRequest, KindInternal}},

	{Method: "GET", Pattern: "/v1/servers", Name: OpListServers,
		Summary:  "List the configured servers",
		Response: reflect.TypeFor[ServerList](), Status: 200, Problems: problemsAny},
	{Method: "GET", Pattern: "/v1/servers/{server}", Name: OpGetServer,
		Summary:  "Describe one configured server",
		Response: reflect.TypeFor[Server](), Status: 200, Problems: []string{KindNotFound, KindForbidden, KindInternal}},
	{Method: "GET", Pattern: "/v1/servers/{server}/tools", Name: OpListServerTools, Caller: true,
		Summary:  "List one server's tools, as the child in the caller's scope lists them",
		Response: reflect.TypeFor[ServerTools](), Status: 200, Problems: problemsChild},
	{Method: "POST", Pattern: "/v1/servers/{server}/tools/{tool}", Name: OpCallTool, Caller: true,
		Body: BodyArguments, Stream: true, Raw: true, OptionalQuery: []string{QueryTask}, Accepted: reflect.TypeFor[Task](),
		Summary: "Call a tool; the result is the child's CallToolResult, or an event stream of progress then the result; ?task=true runs it as a task and answers 202 with the Task at once (a tool whose taskSupport is required runs as a task either way, the plain call waiting for its result)",
		Request: typeArguments, Response: typeRaw, MCPResult: "CallToolResult", Status: 200, Problems: problemsChildBody},
	{Method: "GET", Pattern: "/v1/servers/{server}/openapi.json", Name: OpServerOpenAPI, Caller: true, ETag: true,
		Summary:  "One server's OpenAPI 3.1 document: an operation per tool, typed by its schemas, as the child in the caller's scope lists them",
		Response: typeRaw, Status: 200, Problems: problemsChild},
	{Method: "GET", Pattern: "/v1/servers/{server}/sandbox", Name: OpGetSandbox, Caller: true,
		Summary:  "What would confine the child that serves the caller at its cwd: paths, network, environment names, limits, and what this kernel enforces of it (docs/sandbox.md)",
		Response: reflect.TypeFor[Sandbox](), Status: 200, Problems: problemsChild},
	{Method: "GET", Pattern: "/v1/servers/{server}/resources", Name: OpListResources, Caller: true,
		Summary:  "List one server's resources",
		Response: reflect.TypeFor[ResourceList](), Status: 200, Problems: problemsChild},
	{Method: "GET", Pattern: "/v1/servers/{server}/resources/read", Name: OpReadResource, Caller: true,
		Query: []string{"uri"}, Raw: true,
		Summary:  "Read one resource; the result is the child's ReadResourceResult",
		Response: typeRaw, MCPResult: "ReadResourceResult", Status: 200, Problems: problemsChild},
	{Method: "GET", Pattern: "/v1/servers/{server}/resources/templates", Name: OpListResourceTemplates, Caller: true,
		Summary:  "List one server's resource templates (RFC 6570 URI templates); read a URI made from one with resources/read",
		Response: reflect.TypeFor[ResourceTemplateList](), Status: 200, Problems: problemsChild},
	{Method: "POST", Pattern: "/v1/servers/{server}/complete", Name: OpComplete, Caller: true, Body: BodyDocument, Raw: true,
		Summary: "Complete a prompt's argument or a resource template's variable (MCP completion/complete); the result is the child's CompleteResult",
		Request: reflect.TypeFor[CompleteRequest](), Response: typeRaw, MCPResult: "CompleteResult", Status: 200, Problems: problemsChildBody},
	{Method: "POST", Pattern: "/v1/servers/{server}/logging", Name: OpSetLogLevel, Caller: true, Body: BodyDocument,
		Summary: "Set the level of the log messages (MCP logging/setLevel) of the child in the caller's scope; an instance has one level, so callers sharing it share the last one set; a streamed call carries its instance's messages as message events",
		Request: reflect.TypeFor[LogLevelRequest](), Status: 204, Problems: problemsChildBody},
	{Method: "GET", Pattern: "/v1/servers/{server}/resources/subscribe", Name: OpSubscribeResource, Caller: true,
		Query: []string{"uri"}, Media: MediaEventStream,
		Summary:  "Subscribe to one resource: server-sent events, subscribed first, then updated each time the child says the resource changed, until the request is closed (which unsubscribes) or the instance stops (an end event says so); callers subscribed to a URI on one instance share one child subscription",
		Response: reflect.TypeFor[ResourceUpdated](), Status: 200, Problems: problemsChild},
	{Method: "POST", Pattern: "/v1/servers/{server}/pins/approve", Name: OpApproveTools, Caller: true, Body: BodyDocument,
		Summary: "Approve a server's tool (or all its tools) as last listed, for the definition the caller is served at its cwd: a tool withheld under pinTools is served again (admin)",
		Request: reflect.TypeFor[ApproveTools](), Response: reflect.TypeFor[ApprovedTools](), Status: 200,
		Problems: []string{KindBadRequest, KindNotFound, KindForbidden, KindTooLarge, KindBodyTimeout, KindInternal}},
	{Method: "GET", Pattern: "/v1/servers/{server}/prompts", Name: OpListPrompts, Caller: true,
		Summary:  "List one server's prompts",
		Response: reflect.TypeFor[PromptList](), Status: 200, Problems: problemsChild},
	{Method: "POST", Pattern: "/v1/servers/{server}/prompts/{prompt}", Name: OpGetPrompt, Caller: true,
		Body: BodyPromptArguments, Raw: true,
		Summary: "Get a prompt with arguments; the result is the child's GetPromptResult",
		Request: typePromptArguments, Response: typeRaw, MCPResult: "GetPromptResult", Status: 200, Problems: problemsChildBody},

	{Method: "GET", Pattern: "/v1/openapi.json", Name: OpToolsOpenAPI, Caller: true, ETag: true,
		Summary:  "The OpenAPI 3.1 document of every server the caller may use: an operation per tool; failing servers are reported, not fatal",
		Response: typeRaw, Status: 200, Problems: problemsCaller},
	{Method: "GET", Pattern: "/v1/tasks", Name: OpListTasks,
		Summary:  "List the caller's own tasks (tool calls run with ?task=true), newest first; a finished task is kept for its ttl",
		Response: reflect.TypeFor[TaskList](), Status: 200, Problems: problemsAny},
	{Method: "GET", Pattern: "/v1/tasks/{id}", Name: OpGetTask,
		Summary:  "One of the caller's tasks: its status, asked of the server while it works; another caller's task is not found",
		Response: reflect.TypeFor[Task](), Status: 200, Problems: []string{KindNotFound, KindForbidden, KindInternal}},
	{Method: "DELETE", Pattern: "/v1/tasks/{id}", Name: OpCancelTask,
		Summary:  "Cancel one of the caller's tasks: the server is sent tasks/cancel; the answer is the task after; a task already ended is a 400",
		Response: reflect.TypeFor[Task](), Status: 200,
		Problems: []string{KindBadRequest, KindNotFound, KindForbidden, KindChildFailed, KindTimeout, KindInternal}},
	{Method: "GET", Pattern: "/v1/tasks/{id}/result", Name: OpTaskResult, Raw: true,
		Summary:  "Wait until one of the caller's tasks has ended and answer its result: the child's CallToolResult; a cancelled task has none (400), a failed one answers the server's error",
		Response: typeRaw, MCPResult: "CallToolResult", Status: 200,
		Problems: []string{KindBadRequest, KindNotFound, KindForbidden, KindChildFailed, KindTimeout, KindCanceled, KindInternal}},
	{Method: "GET", Pattern: "/v1/tools", Name: OpListTools, Caller: true,
		OptionalQuery: []string{"q", "tag"},
		Summary:       "List every server's tools, each tagged with its server, or search them (?q=terms, ?tag=t repeated); failing servers are reported, not fatal",
		Response:      reflect.TypeFor[ToolList](), Status: 200, Problems: problemsCaller},
	{Method: "GET", Pattern: "/v1/catalog", Name: OpCatalog, Caller: true,
		OptionalQuery: []string{"budget", "bias"},
		Summary:       "A budgeted catalog: every server with its tool count, then one-line signatures round-robin across servers until ?budget= tokens are spent, ranked by ?bias= terms if given",
		Response:      reflect.TypeFor[Catalog](), Status: 200, Problems: problemsCaller},

	{Method: "GET", Pattern: "/v1/clients/typescript", Name: OpTypeScript, Caller: true, ETag: true,
		OptionalQuery: []string{"servers"}, Media: MediaTypeScript,
		Summary:  "A generated TypeScript client of the caller's servers (all, or those of ?servers=a,b): one self-contained ES module with a typed function per tool",
		Response: reflect.TypeFor[string](), Status: 200, Problems: []string{KindBadRequest, KindNotFound, KindForbidden, KindInternal}},

	{Method: "GET", Pattern: "/v1/types", Name: OpTypes, Caller: true, ETag: true,
		Query: []string{"server"}, OptionalQuery: []string{"tool", "only", "depth", "instructions"}, Media: MediaTypeScript,
		Summary:  "TypeScript declarations of one server's tools (or of ?tool=, or of ?only=a,b), as the child in the caller's scope lists them: the config's prelude as comments, the server's instructions as the namespace's doc comment (?instructions=false leaves them out); ?depth=N collapses objects nested deeper than N levels",
		Response: reflect.TypeFor[string](), Status: 200, Problems: problemsChild},

	{Method: "GET", Pattern: "/v1/events", Name: OpEvents, OptionalQuery: []string{"follow", QuerySession}, Media: MediaEventStream,
		Summary:  "The pool's lifecycle events as server-sent events, oldest kept first (Last-Event-ID resumes; a gap event counts what was lost); ?follow=false ends the stream after the kept ones; ?session= (a session's key or name) keeps that session's",
		Response: reflect.TypeFor[LifecycleEvent](), Status: 200, Problems: []string{KindBadRequest, KindNotFound, KindForbidden, KindInternal}},
	{Method: "GET", Pattern: "/v1/log", Name: OpLog, OptionalQuery: []string{QuerySince, QueryServer, QuerySession, QueryLevel, QueryFollow}, Media: MediaEventStream,
		Summary:  "The daemon's log records as server-sent events, oldest kept first, selected by ?since= (a duration back from now, or an RFC 3339 time), ?server=, ?session= (a session's key or name) and ?level= (default info); ?follow=true then streams new ones (admin)",
		Response: reflect.TypeFor[LogRecord](), Status: 200, Problems: []string{KindBadRequest, KindNotFound, KindForbidden, KindUnavailable, KindInternal}},
	{Method: "GET", Pattern: "/v1/calls", Name: OpCallFeed, OptionalQuery: []string{QuerySession}, Media: MediaEventStream,
		Summary:  "Every tool call as it finishes, from any listener, as server-sent events named call: server, tool, key, caller, duration and outcome; none kept, a slow reader's are dropped and counted (admin); with ?session= (a session's key or name) that session's calls only, for an admin or the session's creator",
		Response: reflect.TypeFor[CallFinished](), Status: 200, Problems: []string{KindBadRequest, KindNotFound, KindForbidden, KindUnavailable, KindInternal}},
	{Method: "GET", Pattern: "/v1/fleet", Name: OpFleet,
		OptionalQuery: []string{QueryTag, QueryProbe, QueryTimeout},
		Summary:       "The brokers among the daemon's tailnet peers (by ?tag=, default tag:mcpx, or ?probe=true: every peer's /healthz), each asked in parallel, bounded: name, version, servers, instances, state (admin)",
		Response:      reflect.TypeFor[Fleet](), Status: 200, Problems: []string{KindBadRequest, KindForbidden, KindUnavailable, KindInternal}},
	{Method: "GET", Pattern: "/v1/fleet/sd", Name: OpFleetSD,
		OptionalQuery: []string{QueryTag, QueryProbe, QueryTimeout},
		Summary:       "Prometheus HTTP service discovery (http_sd_configs) of the fleet: this daemon first, then every broker GET /v1/fleet finds, each scraped at /metrics, labelled broker and __meta_mcpx_broker_{name,dns_name,version,state,self}; off a tailnet, this daemon's loopback address alone (admin or metrics)",
		Response:      reflect.TypeFor[FleetTargets](), Status: 200, Problems: []string{KindBadRequest, KindForbidden, KindUnavailable, KindInternal}},
	{Method: "GET", Pattern: "/v1/instances", Name: OpListInstances,
		Summary:  "List the pooled child instances",
		Response: reflect.TypeFor[InstanceList](), Status: 200, Problems: problemsAny},
	{Method: "DELETE", Pattern: "/v1/instances/{id}", Name: OpStopInstance,
		Summary: "Stop one instance after draining its calls",
		Status:  204, Problems: []string{KindNotFound, KindForbidden, KindTimeout, KindCanceled, KindInternal}},

	{Method: "POST", Pattern: "/v1/leases", Name: OpAcquireLease, Body: BodyDocument,
		Summary: "Acquire a lease: a remote caller's pid-style lifetime; send its id as Mcpx-Lease, renew it before it expires, release it when done",
		Request: reflect.TypeFor[LeaseRequest](), Response: reflect.TypeFor[Lease](), Status: 200,
		Problems: []string{KindBadRequest, KindForbidden, KindExhausted, KindTooLarge, KindBodyTimeout, KindInternal}},
	{Method: "DELETE", Pattern: "/v1/leases/{lease}", Name: OpReleaseLease,
		Summary: "Release a lease (the caller's own; an admin's, any): its instances are drained and stopped now",
		Status:  204, Problems: []string{KindNotFound, KindForbidden, KindTimeout, KindCanceled, KindInternal}},
	{Method: "POST", Pattern: "/v1/leases/{lease}/renew", Name: OpRenewLease, Body: BodyDocument,
		Summary: "Renew a lease for its ttl, or for the ttl given",
		Request: reflect.TypeFor[LeaseRequest](), Response: reflect.TypeFor[Lease](), Status: 200,
		Problems: []string{KindBadRequest, KindNotFound, KindForbidden, KindTooLarge, KindBodyTimeout, KindInternal}},

	{Method: "GET", Pattern: "/v1/pins", Name: OpListPins,
		Summary:  "The tool pins of each server definition: each tool's state (approved, changed, new, removed), hashes, flags, and for the daemon's owner the diff from the approved definition (admin)",
		Response: reflect.TypeFor[ToolPins](), Status: 200, Problems: problemsAny},

	{Method: "GET", Pattern: "/v1/sessions", Name: OpListSessions,
		Summary:  "List the sessions (instances keyed by a session, parent session, lease or pid): the caller's own, or everyone's for an admin",
		Response: reflect.TypeFor[SessionList](), Status: 200, Problems: problemsAny},
	{Method: "GET", Pattern: "/v1/sessions/{key}", Name: OpGetSession,
		Summary:  "Describe one session by its key (path-escaped) or its name",
		Response: reflect.TypeFor[Session](), Status: 200, Problems: []string{KindBadRequest, KindNotFound, KindForbidden, KindInternal}},
	{Method: "DELETE", Pattern: "/v1/sessions/{key}", Name: OpStopSession,
		Summary: "Stop a session, by its key or its name: its instances are drained and stopped",
		Status:  204, Problems: []string{KindBadRequest, KindNotFound, KindForbidden, KindTimeout, KindCanceled, KindInternal}},
	{Method: "PATCH", Pattern: "/v1/sessions/{key}", Name: OpSetSession, Body: BodyDocument,
		Summary: "Name a session, by its key or its present name (a named session outlives its creator's process or lease), or set its own idle timeout",
		Request: reflect.TypeFor[SessionPatch](), Response: reflect.TypeFor[Session](), Status: 200,
		Problems: []string{KindBadRequest, KindNotFound, KindForbidden, KindTooLarge, KindBodyTimeout, KindInternal}},

	{Method: "GET", Pattern: "/v1/nix", Name: OpListNix,
		Summary:  "List the servers whose command is a nix: spec, with the locked rev and store path each resolved to, and the cache entries no server references (admin)",
		Response: reflect.TypeFor[NixList](), Status: 200, Problems: problemsAny},
	{Method: "POST", Pattern: "/v1/nix/gc", Name: OpGCNix,
		Summary:  "Drop the nix cache entries, and their GC roots, that no server references (admin)",
		Response: reflect.TypeFor[NixGC](), Status: 200, Problems: []string{KindBadRequest, KindForbidden, KindInternal}},
	{Method: "POST", Pattern: "/v1/nix/refresh/{server}", Name: OpRefreshNix,
		Summary:  "Resolve a server's nix: command again (new lock, build); if the program changed, its instances are drained and replaced (admin)",
		Response: reflect.TypeFor[NixRefreshed](), Status: 200,
		Problems: []string{KindBadRequest, KindNotFound, KindForbidden, KindChildFailed, KindTimeout, KindUnavailable, KindCanceled, KindInternal}},

	{Method: "GET", Pattern: "/v1/stats", Name: OpCallStats,
		OptionalQuery: []string{QuerySince, QueryBy, QueryStep},
		Summary:       "Figures from the call log: count, failures, failure rate and p50/p95/p99 duration of the calls since ?since= (a duration back from now, or an RFC 3339 time), by ?by=server|tool|caller, each row split into buckets of ?step= (a duration; needs since) for charts (admin)",
		Response:      reflect.TypeFor[CallStats](), Status: 200, Problems: []string{KindBadRequest, KindForbidden, KindTimeout, KindUnavailable, KindInternal}},
	{Method: "GET", Pattern: "/v1/tailnet", Name: OpTailnet,
		Summary:  "The daemon's tailnet node: running, needs login (with the URL), stopped, or off (admin)",
		Response: reflect.TypeFor[TailnetStatus](), Status: 200, Problems: problemsAny},
	{Method: "GET", Pattern: "/v1/tokens", Name: OpListTokens,
		Summary:  "List the signed tokens not yet expired and the keys that verify them (admin)",
		Response: reflect.TypeFor[TokenList](), Status: 200, Problems: problemsAny},
	{Method: "POST", Pattern: "/v1/tokens", Name: OpMintToken, Body: BodyDocument,
		Summary: "Mint a signed token with the given rights (the unix socket's owner, or an admin granting no more than its own rights)",
		Request: reflect.TypeFor[TokenRequest](), Response: reflect.TypeFor[MintedToken](), Status: 200,
		Problems: []string{KindBadRequest, KindForbidden, KindTooLarge, KindBodyTimeout, KindInternal}},
	{Method: "POST", Pattern: "/v1/tokens/rotate", Name: OpRotateKey,
		Summary:  "Make a new signing key current; older keys verify their tokens until those expire (admin)",
		Response: reflect.TypeFor[TokenKey](), Status: 200, Problems: problemsAny},
	{Method: "DELETE", Pattern: "/v1/tokens/{id}", Name: OpRevokeToken,
		Summary:  "Revoke a signed token by its id, for good (admin)",
		Response: reflect.TypeFor[Token](), Status: 200, Problems: []string{KindNotFound, KindForbidden, KindInternal}},

	{Method: "POST", Pattern: "/v1/public/approve", Name: OpApprovePublic, Body: BodyDocument,
		Summary: "Approve (or deny) an OAuth client's sign-in on the public face by the one-time code its page shows, narrowed to servers, roots and a lifetime (the owner, on the unix socket; docs/public.md)",
		Request: reflect.TypeFor[PublicApprove](), Response: reflect.TypeFor[PublicApproved](), Status: 200,
		Problems: []string{KindBadRequest, KindNotFound, KindForbidden, KindUnavailable, KindTooLarge, KindBodyTimeout, KindInternal}},
	{Method: "GET", Pattern: "/v1/public/clients", Name: OpListPublicClients,
		Summary:  "List the public face's OAuth clients (name, id, how they registered, where they return to) and their live tokens (the owner; docs/public.md)",
		Response: reflect.TypeFor[PublicClients](), Status: 200, Problems: []string{KindForbidden, KindInternal}},
	{Method: "POST", Pattern: "/v1/public/revoke", Name: OpRevokePublic, Body: BodyDocument,
		Summary: "Revoke an OAuth token of the public face with its whole sign-in, or an OAuth client with every token it holds and its registration, by id (the owner; docs/public.md)",
		Request: reflect.TypeFor[PublicRevoke](), Response: reflect.TypeFor[PublicRevoked](), Status: 200,
		Problems: []string{KindBadRequest, KindNotFound, KindForbidden, KindUnavailable, KindTooLarge, KindBodyTimeout, KindInternal}},

	{Method: "GET", Pattern: "/v1/config/sources", Name: OpConfigSources, Caller: true,
		Summary:  "Show the config chain of the caller's cwd and which file defines each of its servers",
		Response: reflect.TypeFor[ConfigSources](), Status: 200, Problems: problemsCaller},
	{Method: "POST", Pattern: "/v1/daemon/stop", Name: OpStopDaemon, OptionalQuery: []string{QueryForce},
		Summary: "Stop the daemon: it answers, then stops accepting, drains calls and stops every child; with ?force=true it stops every child at once, cutting the calls in flight (admin)",
		Status:  204, Problems: []string{KindBadRequest, KindForbidden, KindUnavailable, KindInternal}},
	{Method: "DELETE", Pattern: "/v1/servers/{server}/auth", Name: OpAuthLogout,
		Summary:  "Sign out of a url server: revoke its tokens where the authorization server offers revocation, and delete them (the owner or an admin; on a perCaller server, each caller their own)",
		Response: reflect.TypeFor[AuthLogout](), Status: 200, Problems: []string{KindBadRequest, KindNotFound, KindForbidden, KindInternal}},
	{Method: "POST", Pattern: "/v1/servers/{server}/auth/login", Name: OpAuthLogin, Body: BodyDocument,
		Summary: "Begin signing in to a url server for a browser sent back to a loopback redirect URI: discovery, client registration, and the authorization URL to open (the owner or an admin; on a perCaller server, each caller for themselves; docs/oauth.md)",
		Request: reflect.TypeFor[AuthLoginRequest](), Response: reflect.TypeFor[AuthLogin](), Status: 200,
		Problems: []string{KindBadRequest, KindNotFound, KindForbidden, KindTooLarge, KindBodyTimeout, KindInternal}},
	{Method: "POST", Pattern: "/v1/servers/{server}/auth/callback", Name: OpAuthCallback, Body: BodyDocument,
		Summary: "Complete a sign-in with the authorization response the browser brought back: state, code and iss are checked, the code exchanged and the tokens stored (the owner or an admin; on a perCaller server, the caller who began it)",
		Request: reflect.TypeFor[AuthCallback](), Response: reflect.TypeFor[AuthStatus](), Status: 200,
		Problems: []string{KindBadRequest, KindNotFound, KindForbidden, KindTooLarge, KindBodyTimeout, KindInternal}},
	{Method: "POST", Pattern: "/v1/servers/{server}/restart", Name: OpRestartServer,
		Summary:  "Drain and replace every instance of a server: calls in flight finish on the old children, new calls go to new ones (admin)",
		Response: reflect.TypeFor[Restarted](), Status: 200, Problems: []string{KindNotFound, KindForbidden, KindUnavailable, KindInternal}},
	{Method: "POST", Pattern: "/v1/refresh", Name: OpRefresh, OptionalQuery: []string{QueryServer},
		Summary:  "Drop the schema cache of one server (?server=) or of all, and list the tools of their running children again (admin)",
		Response: reflect.TypeFor[Refreshed](), Status: 200, Problems: []string{KindBadRequest, KindNotFound, KindForbidden, KindTimeout, KindInternal}},
	{Method: "POST", Pattern: "/v1/daemon/reload", Name: OpReloadDaemon,
		Summary:  "Reload the config file; a config with errors is refused and the running one kept",
		Response: reflect.TypeFor[Reloaded](), Status: 200, Problems: []string{KindConfig, KindForbidden, KindUnavailable, KindInternal}},
	{Method: "POST", Pattern: "/v1/daemon/upgrade", Name: OpUpgradeDaemon, OptionalQuery: []string{QueryBinary},
		Summary:  "Upgrade the daemon in place: drain, re-execute (the running binary or ?binary=), keep every child and listener (admin)",
		Response: reflect.TypeFor[Upgrading](), Status: 200, Problems: []string{KindBadRequest, KindForbidden, KindUnavailable, KindInternal}},
}

// Routes returns the route table, in a stable order. The caller owns the
// returned slice and everything in it.
func Routes() []Route {
	out := make([]Route, len(routes))
	for i, rt := range routes {
		out[i] = rt.clone()
	}
	return out
}

// Lookup returns the route named name (an Op* constant).
func Lookup(name string) (Route, bool) {
	i := slices.IndexFunc(routes, func(rt Route) bool { return rt.Name == name })
	if i < 0 {
		return Route{}, false
	}
	return routes[i].clone(), true
}

func (rt Route) clone() Route {
	rt.Query = slices.Clone(rt.Query)
	rt.OptionalQuery = slices.Clone(rt.OptionalQuery)
	rt.Problems = slices.Clone(rt.Problems)
	return rt
}

// Path fills the route's path parameters, in order, each path-escaped:
// Path("demo", "a/b") of "/v1/servers/{server}/tools/{tool}" is
// "/v1/servers/demo/tools/a%2Fb". It panics if the number of params is not
// the number of parameters in the pattern: that is a bug in the caller.
func (rt Route) Path(params ...string) string {
	var b strings.Builder
	rest := rt.Pattern
	for {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			break
		}
		end := strings.IndexByte(rest[open:], '}')
		if len(params) == 0 || end < 0 {
			panic(fmt.Sprintf("wire: %s: too few path parameters for %s", rt.Name, rt.Pattern))
		}
		b.WriteString(rest[:open])
		b.WriteString(url.PathEscape(params[0]))
		params, rest = params[1:], rest[open+end+1:]
	}
	if len(params) > 0 {
		panic(fmt.Sprintf("wire: %s: too many path parameters for %s", rt.Name, rt.Pattern))
	}
	b.WriteString(rest)
	return b.String()
}
