package config

import "encoding/json"

// OpenAPI is a server whose tools are an OpenAPI service's operations
// (package adapter/openapitools).
type OpenAPI struct {
	// Spec is the document: a file path (relative to the config file's
	// directory), an http(s) URL, or a nix: spec whose output is the file.
	Spec string `json:"spec"`
	// BaseURL is where calls go; "" = the document's first server URL.
	BaseURL string `json:"baseUrl,omitempty"`
	// Headers go on every request; values may hold ${env:NAME}, read
	// from the daemon's environment and never logged.
	Headers map[string]string `json:"headers,omitempty"`
	// Operations selects the operations made tools: operationIds, or
	// "tag:<tag>"; nil = every operation.
	Operations []string `json:"operations,omitempty"`
	// OAuth2 are the client credentials for the document's OAuth2
	// clientCredentials flow; nil = none.
	OAuth2 *OAuth2Client `json:"oauth2,omitempty"`
}

// CLI is a server whose tools are command lines (package adapter/clitools).
type CLI struct {
	Tools map[string]*CLITool `json:"tools"`
}

// CLITool is one command line as a tool.
type CLITool struct {
	Description string `json:"description,omitempty"`
	// Args is the argv, run with no shell: Args[0] the program. An
	// argument that is exactly "{name}" is replaced by the call's
	// argument of that name; no other argument holds a placeholder.
	Args []string `json:"args"`
	// Input is the JSON Schema of the call's arguments; nil = an object
	// of the placeholders, each a string.
	Input json.RawMessage `json:"input,omitempty"`
	// Output is "text" (stdout as text, the default) or "json" (stdout
	// parsed as JSON into structuredContent).
	Output string `json:"output,omitempty"`
}
