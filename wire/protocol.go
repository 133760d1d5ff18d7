package wire

import "encoding/json"

// The rest of MCP a server offers, over REST: resource templates,
// completions, and the child's log (logging/setLevel and
// notifications/message).

// Operation names of these routes (Route.Name).
const (
	OpListResourceTemplates = "listResourceTemplates"
	OpComplete              = "complete"
	OpSetLogLevel           = "setLogLevel"
)

// More events of a streamed call (see StreamCall).
const (
	// StreamMessage: data: LogMessage, a notifications/message of the
	// call's instance while the call runs (every caller of a shared
	// instance gets its messages).
	StreamMessage = "message"
	// StreamElicitationComplete: data: ElicitationComplete, the child's
	// notifications/elicitation/complete for a URL-mode elicitation.
	StreamElicitationComplete = "elicitation-complete"
)

// ResourceTemplateList is the /v1/servers/{server}/resources/templates
// document.
type ResourceTemplateList struct {
	// ResourceTemplates is the child's list: a JSON array of MCP
	// ResourceTemplate objects ({uriTemplate, name, ...}). A URI made from
	// one (RFC 6570) is read with /v1/servers/{server}/resources/read.
	ResourceTemplates json.RawMessage `json:"resourceTemplates" mcp:"[]ResourceTemplate"`
	Server            string          `json:"server"`
}

// Completion reference types (CompleteRef.Type), as MCP spells them.
const (
	RefPrompt   = "ref/prompt"   // a prompt's argument, by the prompt's name
	RefResource = "ref/resource" // a resource template's variable, by the template's URI
)

// CompleteRequest is the body of POST /v1/servers/{server}/complete: the
// params of MCP's completion/complete (server/utilities/completion).
type CompleteRequest struct {
	Ref      CompleteRef      `json:"ref"`
	Argument CompleteArgument `json:"argument"`
	// Context holds the values of the arguments (or variables) already
	// chosen, which a server may use to narrow the completion.
	Context *CompleteContext `json:"context,omitempty"`
}

// CompleteRef names what is completed: a prompt (Type RefPrompt, Name) or
// a resource template (Type RefResource, URI: the template as listed).
type CompleteRef struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	URI  string `json:"uri,omitempty"`
}

// CompleteArgument is the argument (or template variable) completed and
// what has been typed of it so far.
type CompleteArgument struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CompleteContext is CompleteRequest.Context.
type CompleteContext struct {
	Arguments map[string]string `json:"arguments,omitempty"`
}

// MCPLogLevels are the levels of MCP's logging (RFC 5424 severities), least
// severe first: a level asked for passes it and every level after it.
func MCPLogLevels() []string {
	return []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
}

// LogLevelRequest is the body of POST /v1/servers/{server}/logging: the
// params of MCP's logging/setLevel.
type LogLevelRequest struct {
	// Level is one of MCPLogLevels: the child sends notifications/message
	// at this level and above.
	Level string `json:"level"`
}

// LogMessage is the payload of a StreamMessage: a child's
// notifications/message (server/utilities/logging), with the server that
// sent it.
type LogMessage struct {
	Server string          `json:"server"`
	Level  string          `json:"level"`
	Logger string          `json:"logger,omitempty"`
	Data   json.RawMessage `json:"data"`
}

// ElicitationComplete is the payload of a StreamElicitationComplete: the
// child's notifications/elicitation/complete, saying that the interaction
// a URL-mode elicitation sent the caller to has finished.
type ElicitationComplete struct {
	Server        string `json:"server"`
	ElicitationID string `json:"elicitationId"`
}
