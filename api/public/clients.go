package public

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"mcpx.dev/mcpx/auth/access"
)

// The clients the authorization server knows, looked up in this order:
// the pre-registered clients of the config (public.clients), the clients
// registered by DCR (the token store), and a client_id that is an https
// URL, by its Client ID Metadata Document (cimd.go).

// preRegistered indexes the config's clients by id, checked as DCR's are.
func preRegistered(cs []access.Client) (map[string]access.Client, error) {
	m := make(map[string]access.Client, len(cs))
	for _, c := range cs {
		switch {
		case c.ID == "":
			return nil, errors.New("public.clients: a client needs an id")
		case m[c.ID].ID != "":
			return nil, fmt.Errorf("public.clients: the id %q is given twice", c.ID)
		case len(c.RedirectURIs) == 0:
			return nil, fmt.Errorf("public.clients %q: give its redirectUris", c.ID)
		}
		for _, r := range c.RedirectURIs {
			if err := access.CheckRedirect(r); err != nil {
				return nil, fmt.Errorf("public.clients %q: %w", c.ID, err)
			}
		}
		m[c.ID] = c
	}
	return m, nil
}

// clientError is why a client_id names no client this server can use.
// Its text is for the person at the authorization page.
type clientError struct{ msg string }

func (e *clientError) Error() string { return e.msg }

// client returns the client of id, or a *clientError or *cimdError.
func (f *Face) client(ctx context.Context, id string) (access.Client, error) {
	if c, ok := f.clients[id]; ok {
		return c, nil
	}
	if c, ok := f.tokens.Client(id); ok {
		return c, nil
	}
	if !IsCIMD(id) {
		return access.Client{}, &clientError{"This client is not registered with this server, and its client_id is not the https URL of a client metadata document."}
	}
	c, err := f.cimd.client(ctx, id)
	if err != nil {
		f.log.Info("oauth client metadata document refused", "client", id, "why", err)
	}
	return c, err
}

// clientLabel is how the pages and the approver name a client: its name,
// and for a metadata document's client the host that vouches for it
// (anyone may call themselves anything; only the host is checked).
func clientLabel(c access.Client) string {
	name := c.Name
	if IsCIMD(c.ID) {
		u, _ := url.Parse(c.ID)
		if name == "" {
			return u.Host
		}
		return name + " (" + u.Host + ")"
	}
	if name == "" {
		return c.ID
	}
	return name
}

// clientRefusal is the page text for a client lookup's error.
func clientRefusal(err error) string {
	var ce *cimdError
	if errors.As(err, &ce) {
		msg := strings.TrimSuffix(ce.msg, ".")
		return "The client identifies itself by a client metadata document this server cannot use: " + msg + ". Nothing was shared."
	}
	return err.Error() + " Nothing was shared."
}
