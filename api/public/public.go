// Package public is the daemon's public face as an OAuth 2.1 resource
// server (docs/public.md): the listener a reverse proxy or Tailscale
// Funnel exposes to the internet, where MCP clients in a vendor's cloud
// (claude.ai, ChatGPT) reach /mcp with a bearer token and nothing else.
//
// It answers the protected resource metadata (RFC 9728) of /mcp and of
// each /mcp/<server> at the well-known paths, checks a request's bearer
// token (package auth/access: audience-bound, RFC 8707; scoped; expiring)
// and refuses one it does not admit with the challenge an MCP client acts
// on: 401 with `WWW-Authenticate: Bearer resource_metadata=…, scope=…`, or
// 403 insufficient_scope for a step-up. Package api serves the rest of the
// listener (the MCP endpoint, with the token's rights) and nothing more:
// no REST API, no dashboard, no events, no metrics there.
//
//	f, err := public.New(public.Options{URL: "https://mcpx.example.com", Tokens: st})
//	if f.Owns(r.URL.Path) { f.ServeHTTP(w, r) }         // metadata
//	tok, err := f.Authenticate(r, server)               // /mcp, /mcp/<server>
//	if err != nil { f.Refuse(w, r, server, err) }
//
// Nothing here trusts a request header but Authorization: no identity
// header, no forwarded address, no cookie.
package public

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"mcpx.dev/mcpx/auth/access"
)

// Scope is the one scope the MCP endpoint needs: a token without it is
// refused 403 insufficient_scope (a step-up), whatever its rights.
const Scope = "mcp"

// PRMPath is the well-known path of the protected resource metadata
// (RFC 9728 §3); a resource's own is PRMPath followed by its path.
const PRMPath = "/.well-known/oauth-protected-resource"

// Options configure New.
type Options struct {
	// URL is the public face's origin as clients reach it
	// ("https://mcpx.example.com"): https, no path, query or fragment.
	URL    string
	Tokens *access.Store // required
	Logger *slog.Logger  // nil = discard
	// Limit is the rate limit of the metadata and of refused requests, per
	// client address; the zero value = DefaultLimit.
	Limit Limit
	// Issuer, when set, is the external authorization server whose
	// tokens the face takes (issuer.go); the embedded one is then off.
	Issuer *IssuerOptions
	// Clients are the pre-registered clients (the config's
	// public.clients): public clients (PKCE, no secret) known by their id.
	Clients []access.Client
	// FetchTest loosens the fetch of Client ID Metadata Documents, for
	// tests only; the zero value refuses every address but public ones.
	FetchTest FetchTest
}

// Face is the public face's resource server. Its methods are safe for
// concurrent use.
type Face struct {
	origin  string
	tokens  *access.Store
	log     *slog.Logger
	limit   *limiter
	authz   *authz
	clients map[string]access.Client // pre-registered, by id
	cimd    *cimdCache
	// consent is the tailnet consent page's state (consent.go).
	consent *consent
	ext     *issuer // Options.Issuer; nil = the embedded authorization server
}

// CheckURL says what is wrong with a public URL, if anything.
func CheckURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", fmt.Errorf("public URL %q: %w", raw, err)
	case u.Scheme != "https":
		return "", fmt.Errorf("public URL %q: must be https (OAuth clients refuse anything else); put the listener behind a TLS proxy or give --public-cert and --public-key", raw)
	case u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/"):
		return "", fmt.Errorf("public URL %q: give the origin only, e.g. https://mcpx.example.com (mcpx serves /mcp under it)", raw)
	}
	return "https://" + strings.ToLower(u.Host), nil
}

// New returns the face of opts.
func New(opts Options) (*Face, error) {
	origin, err := CheckURL(opts.URL)
	if err != nil {
		return nil, err
	}
	if opts.Tokens == nil {
		return nil, errors.New("public face: no token store")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	clients, err := preRegistered(opts.Clients)
	if err != nil {
		return nil, err
	}
	f := &Face{origin: origin, tokens: opts.Tokens, log: log, limit: newLimiter(opts.Limit), authz: newAuthz(),
		clients: clients, cimd: newCIMDCache(opts.FetchTest), consent: newConsent()}
	if opts.Issuer != nil {
		if f.ext, err = newIssuer(*opts.Issuer, log); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// Close stops what the face runs in the background (an external
// issuer's key refresh).
func (f *Face) Close() {
	if f.ext != nil {
		f.ext.close()
	}
}

// Origin is the public face's origin, e.g. "https://mcpx.example.com".
func (f *Face) Origin() string { return f.origin }

// Issuer is the authorization server the face names in its metadata:
// the external issuer, or the face itself.
func (f *Face) Issuer() string {
	if f.ext != nil {
		return f.ext.o.URL
	}
	return f.origin
}

// scopes are the scopes the face's tokens need: Scope with the embedded
// authorization server, none with an external issuer (its audience binds
// them).
func (f *Face) scopes() []string {
	if f.ext != nil {
		return nil
	}
	return []string{Scope}
}

// Resource is the resource identifier of /mcp (server "") or of
// /mcp/<server>: what a token must be bound to (RFC 8707).
func (f *Face) Resource(server string) string {
	if server == "" {
		return f.origin + "/mcp"
	}
	return f.origin + "/mcp/" + server
}

// metadataURL is where the resource's metadata is (RFC 9728 §3.1).
func (f *Face) metadataURL(server string) string {
	return f.origin + PRMPath + strings.TrimPrefix(f.Resource(server), f.origin)
}

// serverRE is the shape of a server name in a metadata path.
var serverRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ServerPath returns the server of an MCP endpoint path ("/mcp" = "",
// "/mcp/<server>"), and whether path is one: a server's name is 1 to 64
// letters, digits, '.', '_' or '-', beginning with a letter or digit.
func ServerPath(path string) (string, bool) {
	if path == "/mcp" {
		return "", true
	}
	s, ok := strings.CutPrefix(path, "/mcp/")
	return s, ok && serverRE.MatchString(s) && s != "." && s != ".."
}

// Owns reports whether path is one the face answers itself (ServeHTTP).
func (f *Face) Owns(path string) bool {
	_, ok := prmServer(path)
	return ok || (asPaths[path] && f.ext == nil)
}

// prmServer returns the server whose metadata path is path ("" = /mcp).
func prmServer(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, PRMPath)
	switch {
	case !ok:
		return "", false
	case rest == "":
		return "", true
	}
	return ServerPath(rest)
}

// prm is a protected resource's metadata (RFC 9728 §2).
type prm struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name"`
	ResourceDocumentation  string   `json:"resource_documentation,omitempty"`
}

// ServeHTTP answers the paths Owns reports.
func (f *Face) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.serveAS(w, r) {
		return
	}
	server, ok := prmServer(r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if !f.limit.allow(r) {
		f.tooMany(w)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeJSON(w, http.StatusMethodNotAllowed, oauthError{Error: "invalid_request", Description: "the metadata is read with GET"})
		return
	}
	name := "mcpx"
	if server != "" {
		name = "mcpx: " + server
	}
	writeJSON(w, http.StatusOK, prm{Resource: f.Resource(server), AuthorizationServers: []string{f.Issuer()},
		ScopesSupported: f.scopes(), BearerMethodsSupported: []string{"header"}, ResourceName: name})
}

// oauthError is an OAuth error response's body (RFC 6749 §5.2).
type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n')) //nolint:errcheck // the client is gone if this fails
}

func (f *Face) tooMany(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusTooManyRequests, oauthError{Error: "slow_down", Description: "too many requests from this address; retry after a second"})
}
