package wire

// Caller-context headers: what a caller declares about where and who it is.
// The server reads them on routes with Route.Caller set.
const (
	HeaderCwd           = "Mcpx-Cwd"            // absolute path on the broker's machine
	HeaderSession       = "Mcpx-Session"        // the caller's session id
	HeaderParentSession = "Mcpx-Parent-Session" // the session that started the caller's session
	HeaderLease         = "Mcpx-Lease"          // a remote caller's pid-style lifetime
	HeaderPid           = "Mcpx-Pid"            // the caller's pid; trusted from unix-socket callers only
	HeaderScope         = "Mcpx-Scope"          // a scope asked for instead of the server's; its scopePolicy decides
	HeaderScopeFrom     = "Mcpx-Scope-From"     // where Mcpx-Scope came from: flag, env, script (none = api)
)

// HeaderInfo describes one caller-context header, for generated documents.
type HeaderInfo struct {
	Name    string // a Header* constant
	Integer bool   // the value is a decimal integer; otherwise any string
	Summary string
}

var callerHeaders = []HeaderInfo{
	{HeaderCwd, false, "The caller's working directory: an absolute path on the broker's machine. Repo, worktree and cwd scopes are keyed by it."},
	{HeaderSession, false, "The caller's session id (the CLI sends $MCPX_SESSION_ID). Session scopes are keyed by it; a non-owner's ids are namespaced by its name."},
	{HeaderParentSession, false, "The session that started the caller's session (the CLI sends $MCPX_PARENT_SESSION_ID); parent-session scopes are keyed by it."},
	{HeaderLease, false, "A lease id from POST /v1/leases (the CLI sends $MCPX_LEASE): pid scopes are keyed by it, preferred to Mcpx-Pid, and their instances stop when it ends. A lease that expired, was released or is another caller's is refused (bad-request)."},
	{HeaderScope, false, "A scope (global, repo, worktree, cwd, session, parent-session, pid, call) to use instead of the server's configured one (the CLI sends --scope or $MCPX_SCOPE). Allowed only when the server's scopePolicy.allowOverride is true (or names the caller's kind, Mcpx-Scope-From) and scopePolicy.allow names it, and pool.scopePolicy, if set, allows it too; otherwise forbidden, naming the policy field."},
	{HeaderScopeFrom, false, "Where Mcpx-Scope came from, as the caller declares it: flag (the CLI's --scope), env (the CLI's $MCPX_SCOPE) script (a script's; the run's relay sets it on what it forwards) or api; absent = api. A scopePolicy.allowOverride that lists caller kinds takes overrides only from those. Anything else is refused (bad-request)."},
	{HeaderPid, true, "The caller's process id, honoured from unix-socket callers only, and only when it is the connecting process or one of its ancestors (else 400); ignored over TCP."},
}

// CallerHeaders returns the caller-context headers a route with Route.Caller
// reads, in a stable order. The caller owns the slice.
func CallerHeaders() []HeaderInfo {
	return append([]HeaderInfo(nil), callerHeaders...)
}

// Media types the API speaks.
const (
	MediaJSON        = "application/json"         // documents, raw MCP results and request bodies
	MediaProblem     = "application/problem+json" // error answers: a Problem
	MediaEventStream = "text/event-stream"        // a streamed call (Route.Stream): see CallStreamEvents
	MediaTypeScript  = "text/typescript"          // a generated client module (Route.Media)
	MediaMetrics     = "text/plain"               // Prometheus metrics, text exposition format 0.0.4 (Route.Media)
	MediaText        = "text/plain"               // a page for a person's browser (Route.Media)
)

// Caller.Via values: how the caller reached the daemon.
const (
	ViaUnix        = "unix"         // the unix socket; the peer's uid is the daemon's
	ViaTCPLoopback = "tcp-loopback" // a loopback TCP listener
	ViaTailnet     = "tailnet"      // the embedded tailnet node; identity from WhoIs
	ViaPublic      = "public"       // the public face: an OAuth access token's client (docs/public.md)
)

// HeaderCallContext is on the answer of a tool call (not a streamed one):
// the daemon's context of the call, a JSON object {"server", "tool",
// "scope", "key", "instance", "config"?} (wire.CallContext), "config"
// only for the owner. The generated client puts it on the call's record.
const HeaderCallContext = "Mcpx-Call-Context"

// CallContext is the value of HeaderCallContext.
type CallContext struct {
	Server   string `json:"server"`
	Tool     string `json:"tool"`
	Scope    string `json:"scope,omitempty"`
	Key      string `json:"key,omitempty"`
	Instance string `json:"instance,omitempty"`
	Config   string `json:"config,omitempty"` // the file defining the server; the owner's only
}
