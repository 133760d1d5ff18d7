package config

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// DefaultRegistryURL is the official MCP registry, which `mcpx registry`
// asks when the config names no other.
const DefaultRegistryURL = "https://registry.modelcontextprotocol.io"

// Registry configures `mcpx registry search|show|add`: which MCP registry
// (an implementation of the registry API of modelcontextprotocol/registry)
// is asked. The daemon does not read it.
type Registry struct {
	// URL is the registry's base URL, before /v0.1/servers; "" =
	// DefaultRegistryURL. http(s) only; plain http only to a loopback host.
	URL string `json:"url,omitempty"`
}

// BaseURL is r's URL with the default filled in and no trailing slash.
func (r Registry) BaseURL() string {
	if r.URL == "" {
		return DefaultRegistryURL
	}
	return strings.TrimRight(r.URL, "/")
}

// Check checks r as a config's registry block is checked.
func (r Registry) Check() error {
	var p problems
	p.checkRegistry(&r)
	return p.err("")
}

func (p *problems) decodeRegistry(rc *Registry, raw json.RawMessage) {
	if isNull(raw) {
		return
	}
	members, err := objectMembers(raw)
	if err != nil {
		p.add("", "registry", "registry must be an object", `such as {"url": "`+DefaultRegistryURL+`"}`)
		return
	}
	fields := map[string]fieldSpec{"url": {&rc.URL, "a string (the registry's base URL)"}}
	p.decodeFields("", "registry.", members, fields, map[string]bool{})
}

// checkRegistry checks registry.url: an absolute http(s) URL with a host, no
// query or fragment, and plain http only to a loopback host, since what it
// answers decides what `mcpx registry add` installs and runs.
func (p *problems) checkRegistry(rc *Registry) {
	if rc.URL == "" {
		return
	}
	u, err := url.Parse(rc.URL)
	hint := fmt.Sprintf("use an https URL such as %q, or remove registry.url for that default", DefaultRegistryURL)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		p.add("", "registry.url", fmt.Sprintf("%q is not an absolute http(s) URL", rc.URL), hint)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		p.add("", "registry.url", fmt.Sprintf("%q has a query, fragment or user name; the registry's base URL has none", rc.URL), hint)
	case u.Scheme == "http" && !loopbackHost(u.Hostname()):
		p.add("", "registry.url", fmt.Sprintf("%q is plain http to a host that is not loopback: what it answers is installed and run", rc.URL), hint)
	}
}
