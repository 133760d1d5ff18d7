package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

// store reads and writes records in dir. Its methods are not safe for
// concurrent use: Client serializes them under its lock.
type store struct{ dir string }

func (s store) path(server string) string { return filepath.Join(s.dir, server+".json") }

// load returns server's record; nil, nil when there is none.
func (s store) load(server string) (*record, error) {
	if s.dir == "" {
		return nil, nil
	}
	var r record
	found, err := atomicfile.ReadJSON(s.path(server), &r)
	if !found {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the sign-in of %s: %w", server, err)
	}
	return &r, nil
}

// save replaces server's record, 0600 in a 0700 directory.
func (s store) save(server string, r *record) error {
	if s.dir == "" {
		return nil
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(s.path(server), b, 0o600)
}

// remove deletes server's record; none is not an error.
func (s store) remove(server string) error {
	if s.dir == "" {
		return nil
	}
	err := os.Remove(s.path(server))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
