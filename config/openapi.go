package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"mcpx.dev/mcpx/nixresolve/nixspec"
)

// OAuth2Client are the client credentials of an openapi server whose
// document declares an OAuth2 clientCredentials flow (RFC 6749 section
// 4.4): the token is fetched from the flow's tokenUrl and sent as a bearer
// token on the operations whose security names the flow.
type OAuth2Client struct {
	// ClientID and ClientSecret may hold ${env:NAME}, read from the
	// daemon's environment (the secret should: a config file is no place
	// for one).
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret"`
	// Scopes requested; nil = those the operations' security names.
	Scopes []string `json:"scopes,omitempty"`
	// TokenURL overrides the document's tokenUrl.
	TokenURL string `json:"tokenUrl,omitempty"`
}

// decodeOpenAPI decodes a server's "openapi" object; its fields are checked
// like the server's own, misspellings with a did-you-mean.
func (p *problems) decodeOpenAPI(server string, raw json.RawMessage) *OpenAPI {
	members, err := objectMembers(raw)
	if err != nil {
		p.add(server, "openapi", "want an object, got "+clip(string(raw), 20), `such as {"spec": "https://petstore3.swagger.io/api/v3/openapi.json"}`)
		return nil
	}
	o := new(OpenAPI)
	var oauth json.RawMessage
	bad := map[string]bool{}
	p.decodeFields(server, "openapi.", members, map[string]fieldSpec{
		"spec":       {&o.Spec, "a string: a file path, an http(s) URL or a nix: spec"},
		"baseUrl":    {&o.BaseURL, "a string (an http(s) URL)"},
		"headers":    {&o.Headers, "an object with string values"},
		"operations": {&o.Operations, `an array of strings (operationIds or "tag:<tag>")`},
		"oauth2":     {&oauth, `an object such as {"clientId": "${env:API_CLIENT_ID}", "clientSecret": "${env:API_CLIENT_SECRET}"}`},
	}, bad)
	if oauth != nil && !bad["oauth2"] {
		members, err := objectMembers(oauth)
		if err != nil {
			p.add(server, "openapi.oauth2", "want an object, got "+clip(string(oauth), 20), `such as {"clientId": "${env:API_CLIENT_ID}", "clientSecret": "${env:API_CLIENT_SECRET}"}`)
			return o
		}
		o.OAuth2 = new(OAuth2Client)
		p.decodeFields(server, "openapi.oauth2.", members, map[string]fieldSpec{
			"clientId":     {&o.OAuth2.ClientID, "a string"},
			"clientSecret": {&o.OAuth2.ClientSecret, "a string"},
			"scopes":       {&o.OAuth2.Scopes, "an array of strings"},
			"tokenUrl":     {&o.OAuth2.TokenURL, "a string (an http(s) URL)"},
		}, bad)
	}
	return o
}

// commandOnly are the fields of a command server an openapi server has none of.
var commandOnly = []string{"command", "url", "args", "env", "cwd", "inheritEnv", "environment", "headers"}

// checkOpenAPI checks an openapi server: its block, and no field of a
// command or url server beside it.
func (p *problems) checkOpenAPI(name string, s *Server) {
	set := map[string]bool{"command": s.Command != "", "url": s.URL != "", "args": len(s.Args) > 0, "env": len(s.Env) > 0,
		"cwd": s.Cwd != "", "inheritEnv": !s.InheritEnv.IsZero(), "environment": s.Environment != "", "headers": len(s.Headers) > 0}
	for _, f := range commandOnly {
		switch {
		case !set[f]:
		case f == "headers":
			p.add(name, f, "headers is for url servers", "put an openapi service's headers in openapi.headers")
		default:
			p.add(name, f, f+" is set beside openapi", "a server is one of a command, a url, an openapi service or a cli: remove "+f+" or openapi")
		}
	}
	if s.CLI != nil {
		p.add(name, "cli", "cli is set beside openapi", "a server is one of a command, a url, an openapi service or a cli: make them two servers")
	}
	o := s.OpenAPI
	p.checkSpec(name, o.Spec)
	if o.BaseURL != "" {
		p.checkHTTPURL(name, "openapi.baseUrl", o.BaseURL, "the service's root, such as https://api.example.com/v1")
	}
	for _, k := range slices.Sorted(maps.Keys(o.Headers)) {
		if !isToken(k) {
			p.add(name, "openapi.headers", fmt.Sprintf("invalid header name %q", k), "header names are letters, digits and !#$%&'*+-.^_`|~")
		}
		p.checkEnvOnly(name, "openapi.headers."+k, o.Headers[k])
	}
	seen := map[string]bool{}
	for i, op := range o.Operations {
		field := fmt.Sprintf("openapi.operations[%d]", i)
		switch {
		case op == "" || op == "tag:":
			p.add(name, field, "an operation is empty", `name an operationId, or "tag:<tag>" for every operation with that tag`)
		case seen[op]:
			p.add(name, field, fmt.Sprintf("%q is listed twice", op), "keep one of them")
		}
		seen[op] = true
	}
	if o.Operations != nil && len(o.Operations) == 0 {
		p.add(name, "openapi.operations", "operations is empty: the server would have no tools", "leave it out for every operation, or name some")
	}
	if oa := o.OAuth2; oa != nil {
		p.checkOAuth2(name, oa)
	}
}

// checkSpec checks openapi.spec: a nix: spec, an http(s) URL or a path.
// It is loaded once per server, so it may hold no placeholder.
func (p *problems) checkSpec(name, spec string) {
	const field = "openapi.spec"
	switch {
	case spec == "":
		p.add(name, field, "spec is empty", "set it to the OpenAPI document: a file path, an http(s) URL or a nix: spec")
	case strings.Contains(spec, "${"):
		p.add(name, field, "spec may not hold placeholders", "name one document for the server: it is loaded once and shared by every instance")
	case nixspec.Is(spec):
		if _, err := nixspec.Parse(spec); err != nil {
			p.add(name, field, err.Error(), "write it as nix:<flakeref>#<attr>, an output that is the document's file")
		}
	case strings.Contains(spec, "://"):
		p.checkHTTPURL(name, field, spec, "such as https://petstore3.swagger.io/api/v3/openapi.json")
	case strings.ContainsRune(spec, 0):
		p.add(name, field, "spec holds a NUL", "write the document's file path")
	}
}

func (p *problems) checkHTTPURL(name, field, raw, example string) {
	u, err := url.Parse(raw)
	if strings.Contains(raw, "${") || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.add(name, field, fmt.Sprintf("%q is not an absolute http(s) URL", raw), "use one "+example)
	}
}

// envOnly is a ${env:NAME}; no other placeholder is expanded in an
// openapi block (the service is one for every instance).
var envOnly = regexp.MustCompile(`\$\{env:[A-Za-z_][A-Za-z0-9_]*\}`)

func (p *problems) checkEnvOnly(name, field, v string) {
	rest := envOnly.ReplaceAllString(v, "")
	if i := strings.Index(rest, "${"); i >= 0 {
		p.add(name, field, fmt.Sprintf("%q is not expanded here", clip(rest[i:], 24)),
			"only ${env:NAME} is, from the daemon's environment (NAME: letters, digits and _)")
	}
}

func (p *problems) checkOAuth2(name string, oa *OAuth2Client) {
	if oa.ClientID == "" {
		p.add(name, "openapi.oauth2.clientId", "clientId is empty", "set it to the client's id, or ${env:NAME} to read it from the daemon's environment")
	}
	if oa.ClientSecret == "" {
		p.add(name, "openapi.oauth2.clientSecret", "clientSecret is empty", "set it to ${env:NAME} to read the secret from the daemon's environment")
	} else if !envOnly.MatchString(oa.ClientSecret) {
		p.warn(name, "openapi.oauth2.clientSecret", "the client secret is written in the config file",
			"keep it in the daemon's environment and write ${env:NAME} here")
	}
	p.checkEnvOnly(name, "openapi.oauth2.clientId", oa.ClientID)
	p.checkEnvOnly(name, "openapi.oauth2.clientSecret", oa.ClientSecret)
	for i, s := range oa.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\n") {
			p.add(name, fmt.Sprintf("openapi.oauth2.scopes[%d]", i), fmt.Sprintf("scope %q is empty or holds a space", s), "one scope per array element")
		}
	}
	if oa.TokenURL != "" {
		p.checkHTTPURL(name, "openapi.oauth2.tokenUrl", oa.TokenURL, "the authorization server's token endpoint, such as https://auth.example.com/oauth/token")
	}
}
