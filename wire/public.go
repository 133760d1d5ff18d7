package wire

// OpApprovePublic is POST /v1/public/approve's operation name.
const OpApprovePublic = "approvePublic"

// PublicApprove is the body of POST /v1/public/approve: the one-time code
// the public face's authorization page shows, and what the client may
// use, within the approver's own rights: servers (absent = every one the
// approver may use), roots (absolute directories on the daemon's machine;
// absent = anywhere), and how long it may keep refreshing its token.
type PublicApprove struct {
	Code    string   `json:"code"`              // as the page shows it, e.g. "BCDF-GHJK". Required.
	Servers []string `json:"servers,omitempty"` // the servers the client may use; absent = the approver's
	Roots   []string `json:"roots,omitempty"`   // directories its calls may declare; absent = anywhere
	TTL     string   `json:"ttl,omitempty"`     // a Go duration ("8h"); "" = 24h; at most 30 days
	Deny    bool     `json:"deny,omitempty"`    // refuse the client instead (it is told access_denied)
}

// PublicApproved describes the authorization just decided (never a token).
type PublicApproved struct {
	Client       string `json:"client"`       // the OAuth client's id
	ClientName   string `json:"clientName"`   // what it calls itself
	RedirectHost string `json:"redirectHost"` // where the browser returns to
	Resource     string `json:"resource"`     // what it was granted: the public /mcp or /mcp/<server>
	Denied       bool   `json:"denied,omitempty"`
}
