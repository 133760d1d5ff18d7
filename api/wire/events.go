package wire

import (
	"encoding/json"
	"reflect"
)

// The events of a streamed tool call (Route.Stream; Accept:
// MediaEventStream): any number of EventProgress, in order, then exactly one
// EventResult or EventError. Errors found before the call starts (unknown
// server, bad headers or body) are plain problem answers with their status,
// not streams. While a call has nothing to report the server sends a
// KeepAliveComment comment now and then, which readers skip.
const (
	EventProgress    = "progress"   // data: the params of one notifications/progress (Progress)
	EventResult      = "result"     // data: the child's CallToolResult, unchanged
	EventError       = "error"      // data: a Problem: the call failed after the stream began
	KeepAliveComment = "keep-alive" // the text of the keep-alive comment
)

// Progress is the payload of an EventProgress: the params of the child's
// notifications/progress (MCP basic/utilities/progress), passed on as the
// child sent them; these are the members the specification defines.
type Progress struct {
	ProgressToken any      `json:"progressToken"` // string or number
	Progress      float64  `json:"progress"`
	Total         *float64 `json:"total,omitempty"`
	Message       string   `json:"message,omitempty"`
}

// EventType describes one event of a stream.
type EventType struct {
	Name string
	// Payload is the Go type of the event's data: json.RawMessage for the
	// child's raw CallToolResult (MCPResult says so).
	Payload   reflect.Type
	MCPResult string
	Summary   string
}

var events = []EventType{
	{Name: EventProgress, Payload: reflect.TypeFor[Progress](), Summary: "a progress notification from the child"},
	{Name: EventResult, Payload: reflect.TypeFor[json.RawMessage](), MCPResult: "CallToolResult", Summary: "the result; the stream ends"},
	{Name: EventError, Payload: reflect.TypeFor[Problem](), Summary: "the call failed; the stream ends"},
}

// Events returns the events of a streamed call, in the order they may come.
// The caller owns the slice.
func Events() []EventType {
	return append([]EventType(nil), events...)
}
