package access

import (
	"cmp"
	"errors"
	"slices"
	"strings"
)

// The owner's view of the store: every OAuth client with its live
// tokens, and revoking a client or one sign-in by id.

// Registration kinds of a client (Client.Registration).
const (
	RegisteredDCR    = "dcr"    // dynamic client registration (RFC 7591)
	RegisteredCIMD   = "cimd"   // a Client ID Metadata Document: the id is its https URL
	RegisteredConfig = "config" // pre-registered in the config
)

// Registration says how the client came to be known, from its id.
func (c Client) Registration() string {
	switch {
	case strings.HasPrefix(c.ID, "mcpxc_"):
		return RegisteredDCR
	case strings.HasPrefix(c.ID, "https://"):
		return RegisteredCIMD
	}
	return RegisteredConfig
}

// ClientTokens is a client and its live access tokens.
type ClientTokens struct {
	Client     Client
	Registered bool    // kept in the store (DCR); false = known by its tokens only
	Tokens     []Token // live access tokens, oldest first
	SignIns    int     // live sign-ins: families with a live refresh token
}

// Clients returns every registered client and every client holding a
// live token, by name then id.
func (s *Store) Clients() []ClientTokens {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	by := map[string]*ClientTokens{}
	get := func(id, name string) *ClientTokens {
		if ct, ok := by[id]; ok {
			return ct
		}
		c, reg := s.clients[id]
		if !reg {
			c = Client{ID: id, Name: name}
		}
		by[id] = &ClientTokens{Client: c, Registered: reg}
		return by[id]
	}
	for id, c := range s.clients {
		get(id, c.Name)
	}
	for _, t := range s.byHash {
		if !now.Before(t.Expires) {
			continue
		}
		ct := get(t.Client, t.ClientName)
		if t.Refresh {
			ct.SignIns++
		} else {
			ct.Tokens = append(ct.Tokens, t)
		}
	}
	out := make([]ClientTokens, 0, len(by))
	for _, ct := range by {
		slices.SortFunc(ct.Tokens, byCreated)
		out = append(out, *ct)
	}
	slices.SortFunc(out, func(a, b ClientTokens) int {
		return cmp.Or(strings.Compare(a.Client.Name, b.Client.Name), strings.Compare(a.Client.ID, b.Client.ID))
	})
	return out
}

// byCreated orders tokens oldest first; those of one second (Created is
// kept to the second) by id, so that a listing is the same every time.
func byCreated(a, b Token) int {
	return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.ID, b.ID))
}

// ErrNoSuchID is RevokeID's error for an id that is neither a live
// token's nor a known client's.
var ErrNoSuchID = errors.New("no OAuth token or client of that id")

// Revoked is what RevokeID revoked.
type Revoked struct {
	Client string // the client's id
	Name   string // its name
	Token  string // the token's id; "" = the whole client
	Tokens int    // how many tokens went, of either kind
}

// RevokeID revokes, by id, a token with every token of its sign-in
// (its refresh tokens too), or a client with every token it holds and
// its registration: a registered client must register again.
func (s *Store) RevokeID(id string) (Revoked, error) {
	if id == "" {
		return Revoked{}, ErrNoSuchID
	}
	if t, ok := s.byID(id); ok {
		n := s.count(func(x Token) bool { return x.ID == t.ID || (t.Family != "" && x.Family == t.Family) })
		return Revoked{Client: t.Client, Name: t.ClientName, Token: t.ID, Tokens: n}, s.RevokeFamily(t)
	}
	s.mu.Lock()
	c, reg := s.clients[id]
	s.mu.Unlock()
	n := s.count(func(x Token) bool { return x.Client == id })
	if !reg && n == 0 {
		return Revoked{}, ErrNoSuchID
	}
	if err := s.RevokeWhere(func(x Token) bool { return x.Client == id }, ""); err != nil {
		return Revoked{}, err
	}
	if reg {
		if err := s.unregister(id); err != nil {
			return Revoked{}, err
		}
	}
	return Revoked{Client: id, Name: c.Name, Tokens: n}, nil
}

// byID returns the token of id, live or not yet dropped.
func (s *Store) byID(id string) (Token, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.byHash {
		if t.ID == id {
			return t, true
		}
	}
	return Token{}, false
}

func (s *Store) count(match func(Token) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.byHash {
		if match(t) {
			n++
		}
	}
	return n
}

// unregister forgets the registered client of id.
func (s *Store) unregister(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok {
		return nil
	}
	delete(s.clients, id)
	if err := s.saveLocked(); err != nil {
		s.clients[id] = c
		return err
	}
	return nil
}
