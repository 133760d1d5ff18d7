package wire

import "strings"

// ProblemTypeBase prefixes every problem type URI; the suffix is the kind.
const ProblemTypeBase = "https://mcpx.dev/problems/"

// Problem kinds: the suffix of Problem.Type. The broker's error kinds
// (broker.Kind) are the first thirteen; the others are failures only HTTP has.
const (
	KindBadRequest       = "bad-request"            // caller input is wrong (cwd, body, arguments)
	KindNotFound         = "not-found"              // unknown server, tool, instance, resource, prompt, route
	KindForbidden        = "forbidden"              // the caller may not do this
	KindChildFailed      = "child-failed"           // the child crashed, would not start or spoke garbage
	KindTimeout          = "timeout"                // the call or the child's start ran out of time
	KindExhausted        = "exhausted"              // pool caps reached; see Problem.RetryAfter
	KindUnavailable      = "unavailable"            // shutting down, or a server in crash-loop backoff
	KindCanceled         = "canceled"               // the caller went away before the answer (nobody reads it)
	KindConfig           = "config"                 // the configuration is invalid
	KindInternal         = "internal"               // a bug; the detail is logged, not sent
	KindStaleClient      = "stale-client"           // a generated client's tool schemas differ from the child's: regenerate it (HeaderToolHash)
	KindRateLimited      = "rate-limited"           // a rate limit or maxConcurrent refused the call; see Problem.Limit and RetryAfter
	KindAuthRequired     = "authorization-required" // a url server needs sign-in: `mcpx auth login <server>` (docs/oauth.md)
	KindTooLarge         = "too-large"              // the request body is over the limit
	KindMethodNotAllowed = "method-not-allowed"     // the route exists, not with this method
	KindUnauthorized     = "unauthorized"           // a TCP request without the daemon's bearer token
	KindBodyTimeout      = "body-timeout"           // the request body stopped arriving
)

// StatusClientClosedRequest is nginx's 499, the status of KindCanceled: the
// caller disconnected, so nobody reads the answer; it only shows in logs and
// metrics.
const StatusClientClosedRequest = 499

// ProblemType is how one kind of problem looks on the wire.
type ProblemType struct {
	Kind   string // a Kind* constant; the type URI is ProblemTypeBase + Kind
	Status int    // the HTTP status it is answered with
	Title  string // Problem.Title, the same for every problem of the kind
}

var problemTypes = []ProblemType{
	{KindBadRequest, 400, "Bad request"},
	{KindNotFound, 404, "Not found"},
	{KindForbidden, 403, "Forbidden"},
	{KindChildFailed, 502, "Server failed"},
	{KindTimeout, 504, "Timed out"},
	{KindExhausted, 503, "Pool exhausted"},
	{KindUnavailable, 503, "Unavailable"},
	{KindCanceled, StatusClientClosedRequest, "Client closed request"},
	{KindConfig, 422, "Configuration error"}, // a config the user wrote does not load: their input, not the daemon's fault
	{KindInternal, 500, "Internal error"},
	{KindStaleClient, 409, "Stale client"},
	{KindRateLimited, 429, "Too many requests"},
	{KindAuthRequired, 403, "Sign-in required"},
	{KindTooLarge, 413, "Request body too large"},
	{KindMethodNotAllowed, 405, "Method not allowed"},
	{KindUnauthorized, 401, "Unauthorized"},
	{KindBodyTimeout, 408, "Request body timed out"},
}

// ProblemTypes returns every problem type. The caller owns the slice.
func ProblemTypes() []ProblemType {
	return append([]ProblemType(nil), problemTypes...)
}

// LookupProblemType returns the type of kind.
func LookupProblemType(kind string) (ProblemType, bool) {
	for _, pt := range problemTypes {
		if pt.Kind == kind {
			return pt, true
		}
	}
	return ProblemType{}, false
}

// Problem is an RFC 9457 problem details document, with mcpx's extension
// members: the body of every error answer (Content-Type MediaProblem) and
// the payload of a StreamError. It is an error, so clients can return it.
type Problem struct {
	Type   string `json:"type"`   // ProblemTypeBase + kind; stable
	Title  string `json:"title"`  // short, per type
	Status int    `json:"status"` // the HTTP status
	Detail string `json:"detail"` // what went wrong and how to fix it; caller-safe

	Server     string `json:"server,omitempty"`     // the server involved
	Field      string `json:"field,omitempty"`      // the request part or config field involved
	StderrTail string `json:"stderrTail,omitempty"` // the child's last stderr lines; local callers only
	RPCCode    int    `json:"rpcCode,omitempty"`    // the child's JSON-RPC error code
	RetryAfter int    `json:"retryAfter,omitempty"` // seconds; also sent as the Retry-After header
	// Limit is the limit that refused a rate-limited call.
	Limit *ProblemLimit `json:"limit,omitempty"`
}

// ProblemLimit names the limit a rate-limited call ran into: Kind is
// "caller-rate" (the caller's grant or token, or the owner's
// limits.ownerRate), "server-rate" (the server's rate, all callers
// together) or "server-concurrency" (its maxConcurrent); Value is the
// limit as configured ("100/m", "100/m (burst 20)", "4").
type ProblemLimit struct {
	Kind  string `json:"kind"`
	Value string `json:"value"`
}

func (p *Problem) Error() string { return p.Detail }

// Kind is the problem's kind: its type without ProblemTypeBase (the whole
// type if it is not one of ours).
func (p *Problem) Kind() string {
	return strings.TrimPrefix(p.Type, ProblemTypeBase)
}
