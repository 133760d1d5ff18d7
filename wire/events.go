package wire

import (
	"encoding/json"
	"reflect"
	"time"
)

// Names: Stream* are the server-sent events of a stream (a streamed call,
// the log, a stream's end); Event* are the kinds of lifecycle events (GET
// /v1/events), each of which is also sent as an SSE event of its kind.
//
// The events of a streamed tool call (Route.Stream; Accept:
// MediaEventStream): first StreamCall with the call's id, then any number of
// StreamProgress, StreamInput, StreamMessage and
// StreamElicitationComplete, in order, then StreamContext once the call
// reached an instance, then exactly one StreamResult or StreamError. Errors found before the call starts (unknown
// server, bad headers or body) are plain problem answers with their status,
// not streams. While a call has nothing to report the server sends a
// KeepAliveComment comment now and then, which readers skip.
const (
	StreamCall       = "call"       // data: CallStarted, the call's id; always first
	StreamProgress   = "progress"   // data: the params of one notifications/progress (Progress)
	StreamInput      = "input"      // data: InputRequest: the child asks the caller (elicitation, sampling)
	StreamContext    = "context"    // data: CallContext, where the call ran (a plain call's HeaderCallContext)
	StreamResult     = "result"     // data: the child's CallToolResult, unchanged
	StreamError      = "error"      // data: a Problem: the call failed after the stream began
	KeepAliveComment = "keep-alive" // the text of the keep-alive comment
)

// Progress is the payload of a StreamProgress: the params of the child's
// notifications/progress (MCP basic/utilities/progress), passed on as the
// child sent them; these are the members the specification defines.
type Progress struct {
	ProgressToken any      `json:"progressToken"` // string or number
	Progress      float64  `json:"progress"`
	Total         *float64 `json:"total,omitempty"`
	Message       string   `json:"message,omitempty"`
}

// StreamEvent describes one event of a stream.
type StreamEvent struct {
	Name string
	// Payload is the Go type of the event's data: json.RawMessage for the
	// child's raw CallToolResult (MCPResult says so).
	Payload   reflect.Type
	MCPResult string
	Summary   string
}

var events = []StreamEvent{
	{Name: StreamCall, Payload: reflect.TypeFor[CallStarted](), Summary: "the call's id, for answering requests for input; always first"},
	{Name: StreamInput, Payload: reflect.TypeFor[InputRequest](), Summary: "the child asks the caller for input; answer with POST /v1/calls/{call}/input"},
	{Name: StreamProgress, Payload: reflect.TypeFor[Progress](), Summary: "a progress notification from the child"},
	{Name: StreamMessage, Payload: reflect.TypeFor[LogMessage](), Summary: "a log message (notifications/message) of the call's instance, with its server"},
	{Name: StreamElicitationComplete, Payload: reflect.TypeFor[ElicitationComplete](), Summary: "the interaction of a URL-mode elicitation finished (notifications/elicitation/complete)"},
	{Name: StreamContext, Payload: reflect.TypeFor[CallContext](), Summary: "where the call ran: server, tool, scope, key, instance (and, for the owner, the config file); once, before the result or error, when the call reached an instance"},
	{Name: StreamResult, Payload: reflect.TypeFor[json.RawMessage](), MCPResult: "CallToolResult", Summary: "the result; the stream ends"},
	{Name: StreamError, Payload: reflect.TypeFor[Problem](), Summary: "the call failed; the stream ends"},
}

// CallStreamEvents returns the events of a streamed call, in the order they may come.
// The caller owns the slice.
func CallStreamEvents() []StreamEvent {
	return append([]StreamEvent(nil), events...)
}

// The lifecycle events of GET /v1/events: each SSE event is named by its
// kind, carries its id (resume with Last-Event-ID) and a LifecycleEvent as
// data. A resume from an id older than the daemon keeps is answered first
// with an EventGap event (EventGapData).
const (
	EventSpawn   = "spawn"   // a start attempt began
	EventReady   = "ready"   // the child answered initialize
	EventRestart = "restart" // the instance is replaced; reason "executable changed: " and why (bytes changed, location changed, program file changed, package files changed; path set) or "definition changed"
	EventEvict   = "evict"   // stopped to make room for another key
	EventReap    = "reap"    // stopped for idleness or a gone owner
	EventCrash   = "crash"   // the running child exited unexpectedly
	EventExit    = "exit"    // a child ended otherwise (stopped, replaced, session expired)
	EventReload  = "reload"  // the config was reloaded (reason: signal, api, config file)
	// EventReloadRefused: a reload found a config that does not load and
	// kept the running one (reason, for the daemon's owner: the trigger
	// and the config's problems).
	EventReloadRefused = "reload-refused"
	EventBackoff       = "backoff" // failing: no start before until
	EventWedged        = "wedged"  // alive but silent; being killed
	EventGap           = "gap"     // events were lost between the resume id and the oldest kept

	// EventToolChanged: a listing added, changed or removed a tool of a
	// pinned server definition (tool, change, oldHash, newHash, flags;
	// diff for the daemon's owner). EventToolFlagged: a tool first seen
	// reads as instructions to the model (flags).
	EventToolChanged = "tool-changed"
	EventToolFlagged = "tool-flagged"

	// EventAuthRequired: a url server needs sign-in (reason: why);
	// EventAuthSignedIn: someone signed in (or client credentials got a
	// token); EventAuthRefreshed: a token was refreshed; EventAuthFailed:
	// a sign-in or a refresh failed (reason). None carries a token
	// (docs/oauth.md).
	EventAuthRequired  = "auth-required"
	EventAuthSignedIn  = "auth-signed-in"
	EventAuthRefreshed = "auth-refreshed"
	EventAuthFailed    = "auth-failed"
)

// EventUpgrade: the daemon re-executed itself (mcpx daemon upgrade);
// reason, for the daemon's owner: the generation, the old and new version
// and binary identity, the instances adopted and replaced.
const EventUpgrade = "upgrade"

// LifecycleEvents lists the lifecycle event kinds, EventGap last.
func LifecycleEvents() []string {
	return []string{EventSpawn, EventReady, EventRestart, EventEvict, EventReap, EventCrash, EventExit,
		EventReload, EventReloadRefused, EventUpgrade, EventBackoff, EventWedged, EventToolChanged, EventToolFlagged,
		EventAuthRequired, EventAuthSignedIn, EventAuthRefreshed, EventAuthFailed, EventGap}
}

// LifecycleEvent is one event of GET /v1/events. Callers other than the
// daemon's owner see no path and no reason but a restart's; callers
// without admin rights see key and pid only of their own instances.
type LifecycleEvent struct {
	ID       uint64    `json:"id"`
	Time     time.Time `json:"time"`
	Kind     string    `json:"kind"`
	Server   string    `json:"server,omitempty"`
	Key      string    `json:"key,omitempty"`
	Instance string    `json:"instance,omitempty"`
	Pid      int       `json:"pid,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	Path     string    `json:"path,omitempty"`
	Until    time.Time `json:"until,omitzero"`
	// StderrTail is the child's last stderr lines on crash, wedged and
	// backoff events; the daemon's owner only.
	StderrTail string `json:"stderrTail,omitempty"`
	// Tool, Change ("added", "changed" or "removed"), OldHash, NewHash
	// and Flags are tool-changed's and tool-flagged's; Diff, how the
	// tool's description and schemas changed ("-" old, "+" new lines),
	// the daemon's owner's only.
	Tool    string   `json:"tool,omitempty"`
	Change  string   `json:"change,omitempty"`
	OldHash string   `json:"oldHash,omitempty"`
	NewHash string   `json:"newHash,omitempty"`
	Flags   []string `json:"flags,omitempty"`
	Diff    string   `json:"diff,omitempty"`
}

// EventGapData is the data of an EventGap event.
type EventGapData struct {
	Lost uint64 `json:"lost"` // events no longer kept
}
