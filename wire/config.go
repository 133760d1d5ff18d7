package wire

// OpConfigSources is GET /v1/config/sources.
const OpConfigSources = "getConfigSources"

// ConfigSources answers GET /v1/config/sources: the config chain of the
// caller's cwd as the caller is served it, and where each of its servers
// comes from (`mcpx config --sources`). To a caller other than the
// daemon's owner, the owner's own files are named by kind only.
type ConfigSources struct {
	Cwd string `json:"cwd,omitempty"` // canonical; "" = none declared (the owner's config)
	// ProjectConfig is true when project files apply to this caller: it is
	// the owner, or its grant or token says projectConfig: true.
	ProjectConfig bool           `json:"projectConfig"`
	Chain         []ChainDir     `json:"chain"`   // nearest first
	Servers       []ServerSource `json:"servers"` // by name
	Warnings      []string       `json:"warnings,omitempty"`
}

// ChainDir is one directory (or, for an override or fallback path, file)
// of a config chain.
type ChainDir struct {
	Kind    string `json:"kind"` // "override", "project", "user", "system" or "fallback"
	Path    string `json:"path,omitempty"`
	Config  string `json:"config,omitempty"`  // its config.json; "" = none
	Scripts string `json:"scripts,omitempty"` // its scripts/ directory; "" = none
	Lib     string `json:"lib,omitempty"`     // its lib/ directory; "" = none
	Applied bool   `json:"applied"`           // its config.json is merged
	Skipped string `json:"skipped,omitempty"` // why its config.json is not
}

// ServerSource is the file that defines one server.
type ServerSource struct {
	Name       string   `json:"name"`
	File       string   `json:"file,omitempty"` // "" = built in, or the owner's (to others)
	Kind       string   `json:"kind"`           // the layer of File
	Overrides  []string `json:"overrides,omitempty"`
	DisabledBy string   `json:"disabledBy,omitempty"` // the nearer file hiding it: not served
	Instance   string   `json:"instance"`             // the pool's name: the name, or name@hash for a project definition
}
