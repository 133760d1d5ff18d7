// Package oauth is mcpx's OAuth 2.1 client of url servers: the client side
// of the MCP authorization spec (basic/authorization), with no daemon in
// it. The daemon's owner signs in once per server; the tokens are kept in
// a directory, one 0600 file per server, refreshed, and sent on every
// request the server's Transport carries:
//
//	c := oauth.New(oauth.Options{Dir: filepath.Join(stateDir, "oauth"), Logger: log})
//	c.SetServers(map[string]oauth.Server{"linear": {URL: "https://mcp.linear.app/mcp"}})
//	hc := &http.Client{Transport: c.Transport("linear", nil)}
//	// a request hc makes fails with a *RequiredError until a sign-in:
//	login, _ := c.Begin(ctx, "linear", "http://127.0.0.1:8123/callback")
//	// … the user agent opens login.URL and is sent back with code, state, iss …
//	st, err := c.Complete(ctx, "linear", state, code, iss)
//
// # The flow
//
// Discovery starts from the server's 401 (or a step-up 403) challenge:
// the protected resource metadata (RFC 9728) and its well-known
// fallbacks, then the authorization server's metadata (RFC 8414, OpenID
// discovery), with the 2025-03-26 fallbacks for servers that publish
// neither ([Discover]). mcpx identifies itself with a configured client,
// a Client ID Metadata Document, or a dynamic registration (RFC 7591),
// in that order. The request is the authorization code grant with PKCE
// S256, state, the resource (RFC 8707) and the scopes the challenge or the
// metadata name; the answer's iss is checked (RFC 9207). docs/oauth.md is
// the user's account of all of it.
//
// # Secrets
//
// Tokens, codes, verifiers and client secrets are never logged and never
// in an error: the Logger gets servers, issuers, scopes and expiries.
// Errors from a token endpoint carry its error code and description only.
package oauth
