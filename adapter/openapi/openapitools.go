// Package openapi serves an OpenAPI service's operations as tools: an
// adapter.Opener over a 3.0 or 3.1 document (JSON or YAML), read with
// github.com/getkin/kin-openapi.
//
//	op, err := openapitools.New(openapitools.Config{Server: "pets", Spec: "petstore.yaml"})
//	ns, err := op.Open(ctx, adapter.Scope{Server: "pets"})
//	tools, _ := ns.ListTools(ctx)
//	res, _ := ns.CallTool(ctx, adapter.Call{Name: "getPetById", Arguments: []byte(`{"petId": 10}`)})
//
// # Tools
//
// Each operation is one tool (compile.go). Its name is the operationId when
// that fits the names every MCP client accepts, ^[A-Za-z0-9_-]{1,64}$ (the
// aggregate endpoint's rule, api/mcp/names.go); otherwise it is rewritten
// (see [ToolName]). Its input schema is an object of the operation's path,
// query, header and cookie parameters by name, and "body" for the request
// body; its output schema is the first 2xx JSON response's schema, wrapped
// as {"result": …} when it is not an object. Schemas the document
// references are carried into the tool's $defs (schema.go).
//
// # Calls
//
// A call builds the request (call.go, params.go): path templating with
// RFC 3986 escaping, query, header and cookie serialisation per the
// parameter's style and explode, a JSON body, Accept: application/json. A
// 2xx JSON object answer is structuredContent (an array or scalar as
// {"result": …}); any other 2xx answer is text; a non-2xx answer is an
// error result naming the status, with the body. The configured headers go
// on every request, their ${env:NAME} read from the daemon's environment
// when the namespace opens; their values never appear in a message.
//
// # Loading
//
// Open loads the document once and keeps it (load.go): a file is read again
// only when its size or modification time changed; a URL is revalidated
// with If-None-Match on each later Open, and its last copy is used when the
// URL cannot be reached (kept on disk with its ETag when CacheDir is set).
package openapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"mcpx.dev/mcpx/adapter"
)

// Config is one openapi server.
type Config struct {
	Server string // the server's name, for messages
	// Spec is the document: a file path or an http(s) URL.
	Spec string
	// BaseURL is where calls go; "" = the document's first servers[] URL,
	// a relative one resolved against the spec's URL.
	BaseURL string
	// Headers go on every request; values may hold ${env:NAME}.
	Headers map[string]string
	// Operations selects operations by operationId or "tag:<tag>"; nil = all.
	Operations []string
	// OAuth2 are the client credentials for a document that declares an
	// OAuth2 clientCredentials flow; nil = none (such operations are called
	// with Headers only).
	OAuth2 *OAuth2
	// Resolve turns a nix: spec into the path of its output, the
	// document (the broker's nix resolver); nil = nix: specs fail.
	Resolve func(ctx context.Context, spec string) (string, error)
	// Getenv reads the daemon's environment; nil = os.Getenv.
	Getenv func(string) string
	// HTTPClient makes every request; nil = a default client with dial and
	// header timeouts. Redirects to another origin are never followed.
	HTTPClient *http.Client
	// CacheDir keeps URL specs with their ETag; "" = memory only.
	CacheDir string
}

// OAuth2 are client credentials (RFC 6749 section 4.4). ClientID and
// ClientSecret may hold ${env:NAME}.
type OAuth2 struct {
	ClientID     string
	ClientSecret string
	// Scopes requested; nil = the scopes the operations' security
	// requirements name.
	Scopes []string
	// TokenURL overrides the document's tokenUrl; "" = the document's.
	TokenURL string
}

// New checks cfg and returns its Opener. It does no I/O.
func New(cfg Config) (adapter.Opener, error) {
	if cfg.Spec == "" {
		return nil, fmt.Errorf("server %s: openapi.spec is empty: set it to a file path or an http(s) URL of an OpenAPI document", cfg.Server)
	}
	if isURL(cfg.Spec) {
		if u, err := url.Parse(cfg.Spec); err != nil || u.Host == "" {
			return nil, fmt.Errorf("server %s: openapi.spec %q is not an absolute http(s) URL", cfg.Server, cfg.Spec)
		}
	}
	if cfg.BaseURL != "" {
		if u, err := url.Parse(cfg.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("server %s: openapi.baseUrl %q is not an absolute http(s) URL", cfg.Server, cfg.BaseURL)
		}
	}
	for k, v := range cfg.Headers {
		if err := checkEnvRefs(v); err != nil {
			return nil, fmt.Errorf("server %s: openapi.headers.%s: %w", cfg.Server, k, err)
		}
	}
	for i, o := range cfg.Operations {
		if o == "" || o == "tag:" {
			return nil, fmt.Errorf("server %s: openapi.operations[%d] is empty: name an operationId or tag:<tag>", cfg.Server, i)
		}
	}
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	cfg.HTTPClient = sameOriginClient(cfg.HTTPClient)
	return &opener{cfg: cfg}, nil
}

type opener struct {
	cfg Config // constant after New

	mu    sync.Mutex // guards below; held through a load, so Opens load once
	cache *loaded    // the last document loaded, nil before the first
	path  string     // a nix: spec's output, once resolved
}

func (o *opener) Kind() string { return "openapi" }

// Identity hashes everything the tools depend on but the document's bytes
// (a changed document is seen by the next Open).
func (o *opener) Identity() string {
	b, _ := json.Marshal(struct {
		Spec, BaseURL string
		Headers       map[string]string
		Operations    []string
		OAuth2        *OAuth2
	}{o.cfg.Spec, o.cfg.BaseURL, o.cfg.Headers, o.cfg.Operations, o.cfg.OAuth2})
	sum := sha256.Sum256(b)
	return "openapi:" + hex.EncodeToString(sum[:16])
}

func (o *opener) Open(ctx context.Context, _ adapter.Scope) (adapter.Namespace, error) {
	api, err := o.load(ctx)
	if err != nil {
		return nil, err
	}
	headers, err := o.headers()
	if err != nil {
		return nil, err
	}
	auth, all, err := o.oauth(api)
	if err != nil {
		return nil, err
	}
	return &namespace{api: api, client: o.cfg.HTTPClient, headers: headers, oauth: auth, oauthAll: all}, nil
}

// headers expands the configured headers' ${env:NAME}.
func (o *opener) headers() (http.Header, error) {
	h := http.Header{}
	for k, v := range o.cfg.Headers {
		val, err := expandEnv(v, o.cfg.Getenv)
		if err != nil {
			return nil, fmt.Errorf("server %s: openapi.headers.%s: %w", o.cfg.Server, k, err)
		}
		h.Set(k, val)
	}
	return h, nil
}

// envRef is one ${env:NAME}.
var envRef = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)

// checkEnvRefs refuses a ${...} that is not ${env:NAME}.
func checkEnvRefs(v string) error {
	rest := envRef.ReplaceAllString(v, "")
	if i := strings.Index(rest, "${"); i >= 0 {
		return fmt.Errorf("only ${env:NAME} is expanded here, found %q", clip(rest[i:], 24))
	}
	return nil
}

// expandEnv replaces each ${env:NAME} with its value; an unset one is an
// error naming the variable (never a value).
func expandEnv(v string, getenv func(string) string) (string, error) {
	var missing string
	out := envRef.ReplaceAllStringFunc(v, func(m string) string {
		name := envRef.FindStringSubmatch(m)[1]
		val := getenv(name)
		if val == "" && missing == "" {
			missing = name
		}
		return val
	})
	if missing != "" {
		return "", fmt.Errorf("${env:%s} is not set in the daemon's environment: set it where the daemon starts, then reload", missing)
	}
	return out, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func isURL(spec string) bool {
	return strings.HasPrefix(spec, "http://") || strings.HasPrefix(spec, "https://")
}

// sameOriginClient is c (or a default client) following only redirects to
// the same scheme and host, so the configured headers (API keys in any
// header, which net/http forwards on a redirect) never reach another host.
func sameOriginClient(c *http.Client) *http.Client {
	if c == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = 5 * time.Minute
		c = &http.Client{Transport: t}
	} else {
		cp := *c
		c = &cp
	}
	next := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > 0 && (req.URL.Scheme != via[0].URL.Scheme || req.URL.Host != via[0].URL.Host) {
			return http.ErrUseLastResponse
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return c
}
