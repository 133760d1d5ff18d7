package wire

import (
	"time"

	"mcpx.dev/mcpx/auth/rights"
)

// The owner's list and revoke of the public face's OAuth clients
// (docs/public.md): GET /v1/public/clients, POST /v1/public/revoke.
const (
	OpListPublicClients = "listPublicClients"
	OpRevokePublic      = "revokePublic"
)

// PublicClients is every OAuth client of the public face, with its live
// tokens. Never a secret.
type PublicClients struct {
	// Served is whether the daemon serves a public face at all; without
	// one there are no clients.
	Served bool `json:"served"`
	// Issuer is the external issuer whose tokens the face takes; "" =
	// the embedded authorization server. With one, no token is kept
	// here: the issuer revokes them.
	Issuer  string         `json:"issuer,omitempty"`
	Clients []PublicClient `json:"clients"`
}

// PublicClient is one OAuth client.
type PublicClient struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"` // what it calls itself
	// Registration is how it is known: "dcr" (it registered itself),
	// "cimd" (its id is its metadata document's URL) or "config".
	Registration  string        `json:"registration"`
	RedirectHosts []string      `json:"redirectHosts"`    // where its sign-ins return to
	Created       time.Time     `json:"created,omitzero"` // when it registered
	SignIns       int           `json:"signIns"`          // live sign-ins (refresh tokens)
	Tokens        []PublicToken `json:"tokens"`           // live access tokens, oldest first
	Registered    bool          `json:"registered"`       // kept by the face (false: known by its tokens only)
}

// PublicToken is a live access token of an OAuth client (never its
// secret).
type PublicToken struct {
	ID       string        `json:"id"`
	Resource string        `json:"resource"`           // what it is bound to: the public /mcp or /mcp/<server>
	Rights   rights.Rights `json:"rights"`             // what its bearer may use
	Approver string        `json:"approver,omitempty"` // who approved its sign-in
	Created  time.Time     `json:"created"`
	Expires  time.Time     `json:"expires"`
}

// PublicRevoke is the body of POST /v1/public/revoke: the id of a token
// (its whole sign-in goes) or of a client (every token it holds, and its
// registration).
type PublicRevoke struct {
	ID string `json:"id"` // a token's or a client's id, as `mcpx token ls` shows it. Required.
}

// PublicRevoked is what was revoked.
type PublicRevoked struct {
	Client string `json:"client"`          // the client's id
	Name   string `json:"name,omitempty"`  // its name
	Token  string `json:"token,omitempty"` // the token's id; "" = the whole client
	Tokens int    `json:"tokens"`          // how many tokens went, access and refresh
}
