package wire

import (
	"time"

	"mcpx.dev/mcpx/auth/rights"
)

// HeaderClient must be present, with any non-empty value naming the client
// ("mcpx-cli", "mcpx-ts", "mcpx-bench"), on every request to a network
// listener (loopback TCP, the tailnet) except GET /healthz. It is not a
// CORS-safelisted header, so a web page cannot send it without a preflight,
// which the broker never answers: with the refusal of any request carrying
// Origin, no web page can drive the broker with a visitor's identity
// (cross-site requests, DNS rebinding). The unix socket does not ask for it.
// The dashboard's own requests carry a session cookie and HeaderCSRF
// instead, and may carry the listener's own Origin.
const HeaderClient = "Mcpx-Client"

// HeaderCSRF carries a signed-in browser's CSRF secret (from POST /login)
// with every API request the dashboard makes with its session cookie; a
// request with the cookie and without the secret is refused.
const HeaderCSRF = "Mcpx-Csrf"

// ViaJWT is Caller.Via for a caller admitted by a signed token.
const ViaJWT = "jwt"

// The token routes' operation names.
const (
	OpListTokens  = "listTokens"
	OpMintToken   = "mintToken"
	OpRevokeToken = "revokeToken"
	OpRotateKey   = "rotateTokenKey"
)

// TokenRequest is the body of POST /v1/tokens: the subject and the one
// rule of the token to mint, its members at the top level. It is read as a
// grant is (rights.Rule.Granted): absent servers are no server ("*" =
// all), absent roots no declared cwd ("/" = anywhere; absolute paths on
// the broker's machine), absent scopes every kind, absent tools every tool
// of its servers ("tools": globs over server.tool, * the only wildcard). A
// caller that is not the daemon's owner may grant only rights it has
// itself, each use within one of its own rules; one whose rules have tool
// patterns names the token's tools, each within one of its patterns. projectConfig lets the bearer's project files
// (config.json found upward from its cwd, under its roots) define its
// servers; admin lets it use the admin routes.
type TokenRequest struct {
	Subject string `json:"sub"` // who the token is for; the caller's name. Required.
	rights.Rule
	TTL string `json:"ttl,omitempty"` // a Go duration ("24h"); "" = 24h; at most 90 days
}

// Token describes a minted token (never the token itself).
type Token struct {
	ID      string `json:"id"` // the jti: what revoke takes
	Subject string `json:"sub"`
	// Rights are the token's rules (a token minted by POST /v1/tokens has
	// one); in a rule an absent list has no limit, [] allows nothing.
	Rights    rights.Rights `json:"rights"`
	KeyID     string        `json:"kid"`
	IssuedAt  time.Time     `json:"issuedAt"`
	ExpiresAt time.Time     `json:"expiresAt"`
	Revoked   bool          `json:"revoked"`
	// Minter is who minted it; the token dies with the minter's rights.
	// Absent for a token minted before minters were recorded.
	Minter *TokenMinter `json:"minter,omitempty"`
}

// TokenMinter is who minted a token: its caller name and how it came (a
// Via value). A token minted with a token names that token's id; the
// daemon's owner is Owner.
type TokenMinter struct {
	Name  string `json:"name"`
	Via   string `json:"via"`
	Owner bool   `json:"owner"`
	Token string `json:"token,omitempty"`
}

// MintedToken answers POST /v1/tokens: the token, shown once, and its
// description.
type MintedToken struct {
	Token string `json:"token"` // send as "Authorization: Bearer <token>"
	Info  Token  `json:"info"`
}

// TokenKey describes a signing key (never its private part).
type TokenKey struct {
	ID      string `json:"kid"`
	Current bool   `json:"current"` // signs new tokens
	// Created is when the key was made; RetiresAfter, for a key that is no
	// longer current, is when its last token expires and it stops
	// verifying.
	Created      time.Time `json:"created"`
	RetiresAfter time.Time `json:"retiresAfter,omitzero"`
}

// TokenList answers GET /v1/tokens: the broker's identity (the issuer and
// audience of its tokens), the tokens not yet expired, newest first, and
// the keys that still verify.
type TokenList struct {
	Identity string     `json:"identity"`
	Tokens   []Token    `json:"tokens"`
	Keys     []TokenKey `json:"keys"`
}
