package wire

import (
	"encoding/json"
	"time"
)

// Input kinds (InputRequest.Kind): what a child asks a call's caller for.
const (
	InputElicitation = "elicitation" // MCP elicitation/create: a form; answer with content matching RequestedSchema
	InputSampling    = "sampling"    // MCP sampling/createMessage: answer with a CreateMessageResult as content
)

// Elicitation modes (InputRequest.Mode), as MCP 2025-11-25 spells them.
const (
	InputModeForm = "form" // answer with content matching RequestedSchema
	InputModeURL  = "url"  // the user opens URL; accept says they agreed to
)

// Input actions (InputAnswer.Action), as MCP's ElicitResult spells them.
const (
	ActionAccept  = "accept"  // content holds the answer
	ActionDecline = "decline" // the user said no
	ActionCancel  = "cancel"  // the user dismissed the question
)

// CallStarted is the payload of StreamCall, the first event of a streamed
// call: the id its caller answers requests for input under
// (POST /v1/calls/{call}/input).
type CallStarted struct {
	Call string `json:"call"`
}

// InputRequest is the payload of StreamInput: the child asks the caller of
// the call for input. The caller answers with POST
// /v1/calls/{call}/input before Expires; a caller that does not, or goes
// away, gets the child a decline (an error for sampling).
type InputRequest struct {
	Call  string `json:"call"`  // the call's id (CallStarted.Call)
	Input string `json:"input"` // this request's id, for InputAnswer.Input
	Kind  string `json:"kind"`  // InputElicitation or InputSampling
	// Message is the elicitation's message to show the user; "" for
	// sampling.
	Message string `json:"message,omitempty"`
	// Mode is the elicitation's mode: InputModeForm (answer with content)
	// or InputModeURL (open URL; answer accept once it is opened, with no
	// content); "" for sampling.
	Mode string `json:"mode,omitempty"`
	// URL is a URL-mode elicitation's URL, for the user to open; the
	// child sends notifications/elicitation/complete
	// (StreamElicitationComplete) when the interaction there is done.
	URL string `json:"url,omitempty"`
	// ElicitationID is a URL-mode elicitation's id, as the child named it.
	ElicitationID string `json:"elicitationId,omitempty"`
	// RequestedSchema is the elicitation's requestedSchema: a flat object
	// schema of primitive properties (MCP client/elicitation) the answer's
	// content must match.
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	// Params are the child's request params, as it sent them (for
	// sampling: messages, systemPrompt, maxTokens, ...).
	Params  json.RawMessage `json:"params"`
	Expires time.Time       `json:"expires"` // when the broker answers for the caller
}

// InputAnswer is the body of POST /v1/calls/{call}/input.
type InputAnswer struct {
	Input  string `json:"input"`  // InputRequest.Input
	Action string `json:"action"` // ActionAccept, ActionDecline or ActionCancel
	// Content is the answer with ActionAccept: for elicitation an object
	// matching the requested schema; for sampling a CreateMessageResult
	// ({role, content, model, stopReason?}). Absent otherwise.
	Content json.RawMessage `json:"content,omitempty"`
}
