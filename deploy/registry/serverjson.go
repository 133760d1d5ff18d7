package registry

import "encoding/json"

// The server.json format, as the registry's OpenAPI document (version
// 2025-12-01) has it: the members mcpx reads. These are persisted (a
// registry's answers), hence their JSON tags.

// ServerList is GET /v0.1/servers and .../versions.
type ServerList struct {
	Servers  []ServerResponse `json:"servers"`
	Metadata struct {
		NextCursor string `json:"nextCursor,omitempty"`
		Count      int    `json:"count,omitempty"`
	} `json:"metadata"`
}

// ServerResponse is one server version with the registry's metadata.
type ServerResponse struct {
	Server ServerJSON `json:"server"`
	Meta   struct {
		Official *Official `json:"io.modelcontextprotocol.registry/official,omitempty"`
	} `json:"_meta"`
	// Raw is the object as the registry sent it, for --json.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON keeps the raw object beside the decoded one.
func (r *ServerResponse) UnmarshalJSON(b []byte) error {
	type plain ServerResponse
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*r = ServerResponse(p)
	r.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// Status is the version's status: "active", "deprecated", "deleted", or ""
// when the registry does not say.
func (r *ServerResponse) Status() string {
	if r.Meta.Official == nil {
		return ""
	}
	return r.Meta.Official.Status
}

// Official is the registry's metadata of a version.
type Official struct {
	Status        string `json:"status,omitempty"`
	StatusMessage string `json:"statusMessage,omitempty"`
	PublishedAt   string `json:"publishedAt,omitempty"`
	UpdatedAt     string `json:"updatedAt,omitempty"`
	IsLatest      bool   `json:"isLatest,omitempty"`
}

// ServerJSON is a server.json: one version of a server.
type ServerJSON struct {
	Name        string      `json:"name"`
	Title       string      `json:"title,omitempty"`
	Description string      `json:"description"`
	Version     string      `json:"version"`
	WebsiteURL  string      `json:"websiteUrl,omitempty"`
	Repository  *Repository `json:"repository,omitempty"`
	Packages    []Package   `json:"packages,omitempty"`
	Remotes     []Transport `json:"remotes,omitempty"`
}

// Repository is where the server's source is.
type Repository struct {
	URL       string `json:"url"`
	Source    string `json:"source,omitempty"`
	Subfolder string `json:"subfolder,omitempty"`
}

// Package is one way to run the server locally.
type Package struct {
	RegistryType         string          `json:"registryType"` // npm, pypi, oci, nuget, mcpb (nix: mcpx's)
	RegistryBaseURL      string          `json:"registryBaseUrl,omitempty"`
	Identifier           string          `json:"identifier"`
	Version              string          `json:"version,omitempty"`
	FileSHA256           string          `json:"fileSha256,omitempty"`
	RuntimeHint          string          `json:"runtimeHint,omitempty"`
	Transport            Transport       `json:"transport"`
	RuntimeArguments     []Argument      `json:"runtimeArguments,omitempty"`
	PackageArguments     []Argument      `json:"packageArguments,omitempty"`
	EnvironmentVariables []KeyValueInput `json:"environmentVariables,omitempty"`
}

// Transport is a package's transport, or a remote: type stdio,
// streamable-http or sse, with the URL and headers of the last two.
type Transport struct {
	Type      string           `json:"type"`
	URL       string           `json:"url,omitempty"`
	Headers   []KeyValueInput  `json:"headers,omitempty"`
	Variables map[string]Input `json:"variables,omitempty"` // a remote's {var}s in its URL
}

// Input is a value the user may have to give.
type Input struct {
	Description string           `json:"description,omitempty"`
	IsRequired  bool             `json:"isRequired,omitempty"`
	Format      string           `json:"format,omitempty"` // string, number, boolean, filepath
	Value       string           `json:"value,omitempty"`  // fixed by the publisher, {var}s from Variables
	IsSecret    bool             `json:"isSecret,omitempty"`
	Default     string           `json:"default,omitempty"`
	Placeholder string           `json:"placeholder,omitempty"`
	Choices     []string         `json:"choices,omitempty"`
	Variables   map[string]Input `json:"variables,omitempty"`
}

// Argument is a positional or a named (--flag value) command-line argument.
type Argument struct {
	Input
	Type       string `json:"type"`                // positional or named
	Name       string `json:"name,omitempty"`      // named: the flag, with its dashes
	ValueHint  string `json:"valueHint,omitempty"` // positional: its label
	IsRepeated bool   `json:"isRepeated,omitempty"`
}

// KeyValueInput is an environment variable or a header.
type KeyValueInput struct {
	Input
	Name string `json:"name"`
}
