package wire

import "time"

// AuthLoginRequest is the body of POST /v1/servers/{server}/auth/login:
// where the authorization server sends the browser back, a loopback
// listener of the CLI that signs in (docs/oauth.md).
type AuthLoginRequest struct {
	RedirectURI string `json:"redirectUri"` // http://127.0.0.1:<port>/callback
}

// AuthLogin is a sign-in begun: the URL to open in the browser. It holds
// no secret (the PKCE verifier stays in the daemon).
type AuthLogin struct {
	Server           string    `json:"server"`
	AuthorizationURL string    `json:"authorizationUrl"`
	State            string    `json:"state"`
	Expires          time.Time `json:"expires"` // the callback must come before
}

// AuthCallback is the body of POST /v1/servers/{server}/auth/callback:
// the authorization response the browser brought back to the listener.
type AuthCallback struct {
	State string `json:"state"`
	Code  string `json:"code"`
	Iss   string `json:"iss,omitempty"` // RFC 9207; "" = the response had none
}

// The query of GET /v1/auth/redirect: an authorization response (RFC 6749
// section 4.1.2; iss, RFC 9207) or its error.
const (
	QueryCode  = "code"
	QueryState = "state"
	QueryIss   = "iss"
	QueryError = "error"
)

// AuthStatus is one url server's sign-in. It holds no token.
type AuthStatus struct {
	Server      string    `json:"server"`
	Caller      string    `json:"caller,omitempty"` // whose sign-in on a perCaller server ("@<via>:<name>"); absent = the server's own (the owner's)
	SignedIn    bool      `json:"signedIn"`         // tokens are stored
	NeedsSignIn bool      `json:"needsSignIn"`      // calls fail with authorization-required until a sign-in
	Reason      string    `json:"reason,omitempty"` // why, when NeedsSignIn
	Issuer      string    `json:"issuer,omitempty"` // the authorization server
	Client      string    `json:"client,omitempty"` // how mcpx identified itself: configured, metadata-document, registered
	Scopes      []string  `json:"scopes,omitempty"` // granted
	Expiry      time.Time `json:"expiry,omitzero"`  // the access token's; absent = not said
	Refresh     bool      `json:"refresh"`          // a refresh token is stored
	SignedInAt  time.Time `json:"signedInAt,omitzero"`
}

// AuthStatusList is the body of GET /v1/auth: the url servers the caller
// may use, by name.
type AuthStatusList struct {
	Servers []AuthStatus `json:"servers"`
}

// AuthLogout is the answer of DELETE /v1/servers/{server}/auth.
type AuthLogout struct {
	Server  string `json:"server"`
	Revoked bool   `json:"revoked"` // the authorization server accepted the revocation
}
