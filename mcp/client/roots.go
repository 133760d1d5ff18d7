package client

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// initializeParams builds the initialize request params. Field order is
// fixed by the struct layout, so the rootless params are byte-for-byte
//
//	{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{},"url":{}}},"clientInfo":{"name":"mcpx","version":"dev"}}
//
// With a root, the roots capability is declared (spec: client/roots#capabilities)
// and, as extension fields for servers that predate roots (LSP-style
// bridges), rootUri, workspaceFolders and capabilities.workspace.
func initializeParams(version string, opts Options) ([]byte, error) {
	type rootsCap struct {
		ListChanged bool `json:"listChanged"`
	}
	type workspaceCap struct {
		WorkspaceFolders bool `json:"workspaceFolders"`
	}
	type empty struct{}
	type elicitCap struct {
		Form empty `json:"form"`
		URL  empty `json:"url"`
	}
	type caps struct {
		Roots     *rootsCap     `json:"roots,omitempty"`
		Workspace *workspaceCap `json:"workspace,omitempty"`
		// Spec (client/elicitation#capabilities): form and URL mode (a
		// caller that can open a URL is shown it). Always declared: a
		// decline is always a valid answer (see InputRefusal).
		Elicitation elicitCap `json:"elicitation"`
		// Spec (client/sampling#capabilities), with Options.Sampling.
		Sampling *empty `json:"sampling,omitempty"`
	}
	type info struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	p := struct {
		ProtocolVersion  string `json:"protocolVersion"`
		Capabilities     caps   `json:"capabilities"`
		ClientInfo       info   `json:"clientInfo"`
		RootURI          string `json:"rootUri,omitempty"`
		WorkspaceFolders []root `json:"workspaceFolders,omitempty"`
	}{
		ProtocolVersion: version,
		ClientInfo:      info{Name: opts.ClientName, Version: opts.ClientVersion},
	}
	if opts.Sampling {
		p.Capabilities.Sampling = &empty{}
	}
	if p.ClientInfo.Name == "" {
		p.ClientInfo.Name = "mcpx"
	}
	if p.ClientInfo.Version == "" {
		p.ClientInfo.Version = "dev"
	}
	if opts.Root != "" {
		r, err := newRoot(opts.Root)
		if err != nil {
			return nil, err
		}
		// listChanged is false: an instance's root is fixed at creation.
		p.Capabilities.Roots = &rootsCap{}
		p.Capabilities.Workspace = &workspaceCap{WorkspaceFolders: true}
		p.RootURI = r.URI
		p.WorkspaceFolders = []root{r}
	}
	return json.Marshal(p)
}

// root is one entry of a roots/list answer (spec: client/roots#root) and of
// workspaceFolders.
type root struct {
	URI  string `json:"uri"`
	Name string `json:"name"`
}

func newRoot(dir string) (root, error) {
	if !filepath.IsAbs(dir) {
		return root{}, fmt.Errorf("root %q is not an absolute path", dir)
	}
	return root{URI: FileURI(dir), Name: rootName(dir)}, nil
}

func rootName(dir string) string {
	name := filepath.Base(dir)
	if name == string(filepath.Separator) || name == "." {
		return dir
	}
	return name
}

// FileURI returns the file URI of the absolute path p, percent-encoded
// (RFC 8089): "/src/my app" → "file:///src/my%20app".
func FileURI(p string) string {
	p = filepath.ToSlash(p)
	if !strings.HasPrefix(p, "/") { // C:/x → /C:/x
		p = "/" + p
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// rootsResult is the answer to roots/list.
//
// Spec (client/roots): "Clients that support roots MUST declare the roots
// capability", and a client without it answers -32601. mcpx deviates for
// rootless instances on purpose (docs/children.md, "Spawning a child"): the
// initialize stays byte-for-byte the rootless one, yet a child that asks
// anyway gets {"roots":[]} — "no roots" — rather than an error, because many
// servers treat a roots/list error as fatal while an empty list is a state
// they already handle.
func rootsResult(opts Options) ([]byte, error) {
	if opts.Root == "" {
		return []byte(`{"roots":[]}`), nil
	}
	r, err := newRoot(opts.Root)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Roots []root `json:"roots"`
	}{[]root{r}})
}
