package oauth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"mcpx.dev/mcpx/internal/atomicfile"
)

// record is one server's sign-in as the store keeps it: one file per
// server, <Dir>/<server>.json, mode 0600. It holds secrets (the tokens, a
// registered client's secret): it is never logged or sent anywhere but to
// the endpoints it names.
type record struct {
	URL      string    `json:"url"`      // the server's URL when it was signed in to; another URL ignores the record
	Issuer   string    `json:"issuer"`   // the authorization server's issuer
	Resource string    `json:"resource"` // the RFC 8707 resource the tokens are for
	Token    string    `json:"tokenEndpoint"`
	Revoke   string    `json:"revocationEndpoint,omitempty"`
	Client   clientReg `json:"client"`
	Scopes   []string  `json:"scopes,omitempty"` // granted (the token's scope, else those asked for)
	SignedIn time.Time `json:"signedIn"`

	AccessToken  string    `json:"accessToken"`
	TokenType    string    `json:"tokenType,omitempty"`
	RefreshToken string    `json:"refreshToken,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"` // zero = the server did not say
	Issued       time.Time `json:"issued,omitzero"` // when the access token came: Expiry-Issued is its lifetime

	// Registrations are the clients dynamically registered, one per issuer
	// and redirect URI, kept across sign-ins (and a sign-out: they are not
	// tokens).
	Registrations []clientReg `json:"registrations,omitempty"`
}

// clientReg is how mcpx identifies itself to one authorization server.
type clientReg struct {
	Issuer      string `json:"issuer"`
	RedirectURI string `json:"redirectUri,omitempty"` // for a dynamic registration: what it was registered with
	ID          string `json:"id"`
	// Secret is a dynamically registered client's secret; a configured
	// client's secret is never stored (it is read from the config).
	Secret     string `json:"secret,omitempty"`
	AuthMethod string `json:"authMethod,omitempty"` // client_secret_post, client_secret_basic or none
	Kind       string `json:"kind"`                 // "configured", "metadata-document", "registered"
}

// store reads and writes records in dir: a server's own sign-in is
// <dir>/<server>.json; a caller's, on a PerCaller server,
// <dir>/callers/<server>/<the caller's name, base64url>.json, a name that
// cannot leave the directory whatever the caller is called. Its methods
// are not safe for concurrent use: Client serializes them under its lock.
type store struct{ dir string }

func (s store) path(w who) string {
	if w.account == "" {
		return filepath.Join(s.dir, w.server+".json")
	}
	return filepath.Join(s.callers(w.server), base64.RawURLEncoding.EncodeToString([]byte(w.account))+".json")
}

func (s store) callers(server string) string { return filepath.Join(s.dir, "callers", server) }

// accounts are the callers with a stored sign-in to server.
func (s store) accounts(server string) []string {
	if s.dir == "" {
		return nil
	}
	ents, _ := os.ReadDir(s.callers(server))
	var out []string
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if b, err := base64.RawURLEncoding.DecodeString(name); ok && err == nil && len(b) > 0 {
			out = append(out, string(b))
		}
	}
	return out
}

// load returns w's record; nil, nil when there is none.
func (s store) load(w who) (*record, error) {
	if s.dir == "" {
		return nil, nil
	}
	var r record
	found, err := atomicfile.ReadJSON(s.path(w), &r)
	if !found {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the sign-in of %s: %w", w.server, err)
	}
	return &r, nil
}

// save replaces w's record, 0600 in 0700 directories.
func (s store) save(w who, r *record) error {
	if s.dir == "" {
		return nil
	}
	p := s.path(w)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(p, b, 0o600)
}

// remove deletes w's record; none is not an error.
func (s store) remove(w who) error {
	if s.dir == "" {
		return nil
	}
	err := os.Remove(s.path(w))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
