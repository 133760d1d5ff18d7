// Package access keeps the access tokens of the daemon's public face
// (docs/public.md): opaque bearer secrets, each bound to one resource
// (RFC 8707: the public URL of /mcp or of /mcp/<server>), one OAuth client,
// the scopes it was granted, the rights its approver gave it (package
// rights, never more than the approver's own) and an expiry.
//
//	st, err := access.Open(filepath.Join(state, "auth"))
//	secret, tok, err := st.Issue(access.Grant{Client: "https://app.example/cm.json", Resource: "https://mcpx.example/mcp",
//		Scopes: []string{"mcp"}, Rights: rights.Rights{{Servers: []string{"github"}}}, TTL: time.Hour})
//	tok, err = st.Check(secret) // on every request of the public face
//	err = st.Revoke(tok.ID)      // refused from the next request on
//
// # At rest
//
// The file (TokensFile, mode 0600 in a 0700 directory, replaced
// atomically) holds each token's record and the SHA-256 of its secret,
// never the secret: a secret is 256 random bits, so its hash is as good as
// a password's slow hash (as package auth/owner keeps the owner's tokens).
// Expired tokens are dropped whenever the file is written. The daemon is
// the file's only writer.
package access

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/internal/atomicfile"
)

// TokensFile is the file, in Open's directory, that holds the tokens.
const TokensFile = "public-tokens.json"

// Prefix begins every access token's secret: it tells one from the
// owner's tokens ("mcpx_") and from a signed token, and makes a leaked one
// easy to search for.
const Prefix = "mcpxat_"

// MaxTTL bounds a token's life, whatever its grant asks.
const MaxTTL = 24 * time.Hour

// Errors of Check. None says anything about the tokens there are.
var (
	ErrMalformed = errors.New("the bearer token is not an access token of this broker")
	ErrUnknown   = errors.New("the access token is unknown or was revoked")
	ErrExpired   = errors.New("the access token has expired")
)

// Grant is what a token is issued for.
type Grant struct {
	Client     string        // the OAuth client's id (a CIMD URL, or a registered id)
	ClientName string        // what the client calls itself, for listings; "" = Client
	Resource   string        // the resource the token is bound to (RFC 8707)
	Scopes     []string      // the scopes granted
	Rights     rights.Rights // what the bearer may use: the approver's, narrowed by consent
	Approver   string        // who approved it (a tailnet login, "owner")
	// ApproverNode is the tailnet address of the machine a tailnet
	// approver consented from ("" = approved on the daemon's machine): the
	// face asks the tailnet at each use whether the approver there still
	// has the rights the token carries (docs/public.md).
	ApproverNode string
	TTL          time.Duration // how long it lives; 0 or more than MaxTTL = MaxTTL
}

// Token is an issued token's record: everything but its secret.
type Token struct {
	ID         string        `json:"id"` // short, for listing and revoking; not a secret
	Client     string        `json:"client"`
	ClientName string        `json:"clientName,omitempty"`
	Resource   string        `json:"resource"`
	Scopes     []string      `json:"scopes"`
	Rights     rights.Rights `json:"rights"`
	Approver   string        `json:"approver,omitempty"`
	// ApproverNode is Grant.ApproverNode.
	ApproverNode string    `json:"approverNode,omitempty"`
	Created      time.Time `json:"created"`
	Expires      time.Time `json:"expires"`
	SHA256       string    `json:"sha256"` // of the secret
	// Refresh marks a refresh token; Family is the sign-in both kinds
	// descend from (revoked together); Rotated marks a refresh token
	// already exchanged, whose reuse revokes its family.
	Refresh bool   `json:"refresh,omitempty"`
	Family  string `json:"family,omitempty"`
	Rotated bool   `json:"rotated,omitempty"`
}

// HasScope reports whether the token was granted scope.
func (t Token) HasScope(scope string) bool { return slices.Contains(t.Scopes, scope) }

type file struct {
	Tokens  []Token  `json:"tokens"`
	Clients []Client `json:"clients,omitempty"`
}

// Store is one directory's access tokens. Its methods are safe for
// concurrent use.
type Store struct {
	dir string
	now func() time.Time

	mu      sync.Mutex
	byHash  map[string]Token  // guarded by mu
	clients map[string]Client // guarded by mu: by id
}

// Open returns the tokens kept in dir, reading what is there.
func Open(dir string) (*Store, error) {
	s := &Store{dir: dir, now: time.Now, byHash: map[string]Token{}, clients: map[string]Client{}}
	b, err := os.ReadFile(filepath.Join(dir, TokensFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("reading the public face's access tokens: %w", err)
	}
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w (remove the file: every client of the public face then signs in again)", filepath.Join(dir, TokensFile), err)
	}
	for _, t := range f.Tokens {
		s.byHash[t.SHA256] = t
	}
	for _, c := range f.Clients {
		s.clients[c.ID] = c
	}
	return s, nil
}

// SetClock replaces the store's clock (tests).
func (s *Store) SetClock(now func() time.Time) { s.now = now }

// Issue makes an access token for g and returns its secret, which is not
// kept.
func (s *Store) Issue(g Grant) (string, Token, error) {
	return s.issue(g, false, "")
}

// RefreshTTL is how long a refresh token lives.
const RefreshTTL = 30 * 24 * time.Hour

// IssuePair makes an access token and a refresh token of one new family
// for g and returns their secrets.
// The access token lives accessTTL (at most g.TTL); the refresh token
// g.TTL (0 = RefreshTTL), and so does the family.
func (s *Store) IssuePair(g Grant, accessTTL time.Duration) (access, refresh string, tok Token, err error) {
	family := random(9)
	a := g
	if a.TTL <= 0 || accessTTL < a.TTL {
		a.TTL = accessTTL
	}
	access, tok, err = s.issue(a, false, family)
	if err != nil {
		return "", "", Token{}, err
	}
	refresh, _, err = s.issue(g, true, family)
	return access, refresh, tok, err
}

// RevokeFamily revokes t and every token of its sign-in.
func (s *Store) RevokeFamily(t Token) error {
	if t.Family == "" {
		return s.Revoke(t.ID)
	}
	return s.RevokeWhere(func(x Token) bool { return x.Family == t.Family }, "")
}

// ErrReused is Rotate's error for a refresh token already exchanged: its
// whole family is revoked, since one of its two holders is a thief.
var ErrReused = errors.New("the refresh token was already used; every token of that sign-in is revoked: sign in again")

// Rotate exchanges a live refresh token of client for a new access token
// and refresh token of the same family and grant, and marks it used. A
// used one revokes its family (ErrReused).
func (s *Store) Rotate(secret, client string) (access, refresh string, tok Token, err error) {
	old, err := s.Check(secret)
	switch {
	case err != nil:
		return "", "", Token{}, err
	case !old.Refresh || old.Client != client:
		return "", "", Token{}, ErrUnknown
	}
	s.mu.Lock()
	cur, ok := s.byHash[old.SHA256]
	reused := ok && cur.Rotated
	if ok && !reused {
		cur.Rotated = true
		s.byHash[old.SHA256] = cur
		err = s.saveLocked()
	}
	s.mu.Unlock()
	switch {
	case !ok:
		return "", "", Token{}, ErrUnknown
	case reused:
		s.RevokeWhere(func(t Token) bool { return t.Family == old.Family }, "") //nolint:errcheck // refused either way
		return "", "", Token{}, ErrReused
	case err != nil:
		return "", "", Token{}, err
	}
	g := Grant{Client: old.Client, ClientName: old.ClientName, Resource: old.Resource, Scopes: old.Scopes, Rights: old.Rights,
		Approver: old.Approver, ApproverNode: old.ApproverNode, TTL: min(time.Hour, old.Expires.Sub(s.now()))}
	if access, tok, err = s.issue(g, false, old.Family); err != nil {
		return "", "", Token{}, err
	}
	g.TTL = old.Expires.Sub(s.now()) // the family lives no longer than its first refresh token
	refresh, _, err = s.issue(g, true, old.Family)
	return access, refresh, tok, err
}

func (s *Store) issue(g Grant, refresh bool, family string) (string, Token, error) {
	switch {
	case g.Client == "":
		return "", Token{}, errors.New("an access token needs a client")
	case g.Resource == "":
		return "", Token{}, errors.New("an access token needs a resource")
	}
	ttl, max := g.TTL, MaxTTL
	if refresh {
		max = RefreshTTL
	}
	if ttl <= 0 || ttl > max {
		ttl = max
	}
	secret := Prefix + random(32)
	now := s.now().UTC()
	t := Token{ID: random(9), Client: g.Client, ClientName: g.ClientName, Resource: g.Resource,
		Scopes: slices.Clone(g.Scopes), Rights: g.Rights, Approver: g.Approver, ApproverNode: g.ApproverNode,
		Created: now.Truncate(time.Second), Expires: now.Add(ttl), SHA256: hash(secret), Refresh: refresh, Family: family}
	if t.Rights == nil {
		t.Rights = rights.None()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byHash[t.SHA256] = t
	if err := s.saveLocked(); err != nil {
		delete(s.byHash, t.SHA256)
		return "", Token{}, err
	}
	return secret, t, nil
}

// Check returns the token whose secret this is. Its error is ErrMalformed,
// ErrUnknown or ErrExpired.
func (s *Store) Check(secret string) (Token, error) {
	if !strings.HasPrefix(secret, Prefix) || len(secret) > 128 {
		return Token{}, ErrMalformed
	}
	s.mu.Lock()
	t, ok := s.byHash[hash(secret)] // a map lookup by a hash leaks nothing of the secret
	s.mu.Unlock()
	switch {
	case !ok:
		return Token{}, ErrUnknown
	case !s.now().Before(t.Expires):
		return Token{}, ErrExpired
	}
	return t, nil
}

// Revoke removes the token of id; its secret is refused from the next
// request on.
func (s *Store) Revoke(id string) error {
	return s.RevokeWhere(func(t Token) bool { return t.ID == id }, "no access token "+id+": `mcpx token ls` lists them")
}

// RevokeWhere removes every token match selects; none is the error when
// none is selected ("" = no error then).
func (s *Store) RevokeWhere(match func(Token) bool, none string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	gone := map[string]Token{}
	for h, t := range s.byHash {
		if match(t) {
			gone[h] = t
			delete(s.byHash, h)
		}
	}
	if len(gone) == 0 {
		if none == "" {
			return nil
		}
		return errors.New(none)
	}
	if err := s.saveLocked(); err != nil {
		for h, t := range gone {
			s.byHash[h] = t
		}
		return err
	}
	return nil
}

// List returns the live tokens, oldest first.
func (s *Store) List() []Token {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var out []Token
	for _, t := range s.byHash {
		if now.Before(t.Expires) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, byCreated)
	return out
}

// saveLocked writes the live tokens.
func (s *Store) saveLocked() error {
	now := s.now()
	f := file{Tokens: []Token{}, Clients: slices.Collect(maps.Values(s.clients))}
	slices.SortFunc(f.Clients, func(a, b Client) int { return strings.Compare(a.ID, b.ID) })
	for h, t := range s.byHash {
		if !now.Before(t.Expires) {
			delete(s.byHash, h)
			continue
		}
		f.Tokens = append(f.Tokens, t)
	}
	slices.SortFunc(f.Tokens, func(a, b Token) int { return strings.Compare(a.ID, b.ID) })
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("saving the public face's access tokens: %w", err)
	}
	b, _ := json.MarshalIndent(f, "", "  ")
	if err := atomicfile.Write(filepath.Join(s.dir, TokensFile), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("saving the public face's access tokens: %w", err)
	}
	return nil
}

func random(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

func hash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}
