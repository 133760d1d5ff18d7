package jsonrpc

import "slices"

// The protocol versions, in two eras. The handshake era (basic/lifecycle)
// opens a session with initialize: "In the initialize request, the client
// MUST send a protocol version it supports. […] If the server supports
// the requested protocol version, it MUST respond with the same version.
// Otherwise, the server MUST respond with another protocol version it
// supports." The stateless era (SEP-2575) has no initialize: every request
// names its version in _meta (MetaProtocolVersion), and server/discover
// lists the versions a server speaks.
const (
	// StatelessVersion is the stateless era's one version.
	StatelessVersion = "2026-07-28"
	// LatestHandshake is the handshake era's newest version: what mcpx
	// offers, and answers a client that offers a version it does not speak.
	LatestHandshake = "2025-11-25"
)

var handshakeVersions = [...]string{LatestHandshake, "2025-06-18", "2025-03-26", "2024-11-05"}

// HandshakeVersions returns the handshake era's versions mcpx speaks,
// newest first; the caller owns the slice.
func HandshakeVersions() []string { return slices.Clone(handshakeVersions[:]) }

// SupportedVersions returns every version mcpx speaks, newest first: the
// stateless era's, then the handshake era's.
func SupportedVersions() []string {
	return append([]string{StatelessVersion}, handshakeVersions[:]...)
}

// IsHandshakeVersion reports whether v is one of HandshakeVersions.
func IsHandshakeVersion(v string) bool { return slices.Contains(handshakeVersions[:], v) }

// The _meta keys of a stateless request and of its answers (SEP-2575), and
// of the tasks extension.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
	// MetaLogLevel is the level of the log messages a stateless request
	// wants sent while it is served (SEP-2575; logging/setLevel's level
	// in the handshake era); absent = none.
	MetaLogLevel    = "io.modelcontextprotocol/logLevel"
	MetaRelatedTask = "io.modelcontextprotocol/related-task"
	// ExtensionTasks names the tasks extension in capabilities.extensions.
	ExtensionTasks = "io.modelcontextprotocol/tasks"
)

// The methods of MCP's requests and notifications that mcpx sends or
// answers (spec: the schema of each version; removed ones are noted).
const (
	MethodInitialize  = "initialize"                // handshake era only
	MethodInitialized = "notifications/initialized" // handshake era only
	MethodDiscover    = "server/discover"           // stateless era
	MethodPing        = "ping"                      // handshake era only
	MethodCancelled   = "notifications/cancelled"
	MethodProgress    = "notifications/progress"
	MethodMessage     = "notifications/message" // a log record
	MethodSetLevel    = "logging/setLevel"      // handshake era only
	MethodComplete    = "completion/complete"

	MethodToolsList        = "tools/list"
	MethodToolsCall        = "tools/call"
	MethodToolsListChanged = "notifications/tools/list_changed"

	MethodPromptsList        = "prompts/list"
	MethodPromptsGet         = "prompts/get"
	MethodPromptsListChanged = "notifications/prompts/list_changed"

	MethodResourcesList         = "resources/list"
	MethodResourceTemplatesList = "resources/templates/list"
	MethodResourcesRead         = "resources/read"
	MethodResourcesSubscribe    = "resources/subscribe"   // handshake era only
	MethodResourcesUnsubscribe  = "resources/unsubscribe" // handshake era only
	MethodResourceUpdated       = "notifications/resources/updated"
	MethodResourcesListChanged  = "notifications/resources/list_changed"

	// MethodListen opens the stateless era's stream of list changes; the
	// server acknowledges it first (MethodListenAcknowledged).
	MethodListen             = "subscriptions/listen"
	MethodListenAcknowledged = "notifications/subscriptions/acknowledged"

	MethodTasksGet    = "tasks/get"
	MethodTasksResult = "tasks/result" // handshake era only
	MethodTasksList   = "tasks/list"   // handshake era only
	MethodTasksCancel = "tasks/cancel"
	MethodTasksUpdate = "tasks/update" // the stateless tasks extension
	MethodTaskStatus  = "notifications/tasks/status"

	// The requests a server sends its client.
	MethodRootsList           = "roots/list"
	MethodRootsListChanged    = "notifications/roots/list_changed"
	MethodElicit              = "elicitation/create"
	MethodElicitationComplete = "notifications/elicitation/complete"
	MethodSample              = "sampling/createMessage"
)
