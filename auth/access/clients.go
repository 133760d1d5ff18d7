package access

import (
	"errors"
	"fmt"
	"net/url"
	"time"
)

// Client is an OAuth client the public face knows: registered by dynamic
// client registration (RFC 7591) or pre-registered in the config. Every
// client is public (PKCE, no secret), so nothing here is a secret.
type Client struct {
	ID           string    `json:"id"`
	Name         string    `json:"name,omitempty"`
	RedirectURIs []string  `json:"redirectUris"`
	Created      time.Time `json:"created"`
}

// MaxClients bounds the registered clients: registration is open to the
// internet, so the store must not grow without end.
const MaxClients = 256

// CheckRedirect says what is wrong with a client's redirect URI: it must
// be https, or http on a loopback host (a native app, RFC 8252 §7.3), and
// carry no fragment.
func CheckRedirect(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs() || u.Host == "":
		return fmt.Errorf("redirect URI %q is not an absolute URL", raw)
	case u.Fragment != "" || u.User != nil:
		return fmt.Errorf("redirect URI %q has a fragment or credentials", raw)
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && (u.Hostname() == "localhost" || u.Hostname() == "127.0.0.1" || u.Hostname() == "::1"):
		return nil
	}
	return fmt.Errorf("redirect URI %q must be https, or http on localhost, 127.0.0.1 or [::1]", raw)
}

// Register records a client of name with redirects and returns it with
// its new id.
func (s *Store) Register(name string, redirects []string) (Client, error) {
	if len(redirects) == 0 || len(redirects) > 8 {
		return Client{}, errors.New("give 1 to 8 redirect_uris")
	}
	for _, r := range redirects {
		if len(r) > 2000 {
			return Client{}, errors.New("a redirect URI is longer than 2000 characters")
		}
		if err := CheckRedirect(r); err != nil {
			return Client{}, err
		}
	}
	if len(name) > 200 {
		name = name[:200]
	}
	c := Client{ID: "mcpxc_" + random(12), Name: name, RedirectURIs: redirects, Created: s.now().UTC().Truncate(time.Second)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.clients) >= MaxClients {
		return Client{}, fmt.Errorf("this server has %d registered clients, its limit: its owner removes some with `mcpx token ls`", MaxClients)
	}
	s.clients[c.ID] = c
	if err := s.saveLocked(); err != nil {
		delete(s.clients, c.ID)
		return Client{}, err
	}
	return c, nil
}

// Client returns the registered client of id.
func (s *Store) Client(id string) (Client, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	return c, ok
}
