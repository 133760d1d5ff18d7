package wire

// Caller-context headers: what a caller declares about where and who it is.
// The server reads them on routes with Route.Caller set.
const (
	HeaderCwd           = "Mcpx-Cwd"            // absolute path on the broker's machine
	HeaderSession       = "Mcpx-Session"        // the caller's session id
	HeaderParentSession = "Mcpx-Parent-Session" // the session that started the caller's session
	HeaderLease         = "Mcpx-Lease"          // a remote caller's pid-style lifetime
	HeaderPid           = "Mcpx-Pid"            // the caller's pid; trusted from unix-socket callers only
)

// Media types the API speaks.
const (
	MediaJSON        = "application/json"         // documents, raw MCP results and request bodies
	MediaProblem     = "application/problem+json" // error answers: a Problem
	MediaEventStream = "text/event-stream"        // a streamed call (Route.Stream): see Events
)

// Caller.Via values: how the caller reached the daemon.
const (
	ViaUnix        = "unix"         // the unix socket; the peer's uid is the daemon's
	ViaTCPLoopback = "tcp-loopback" // a loopback TCP listener
)
