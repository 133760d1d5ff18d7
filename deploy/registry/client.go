package registry

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// APIPrefix is the path of the API version the client speaks, below a
// registry's base URL: the stable version of the registry's OpenAPI
// document.
const APIPrefix = "/v0.1"

// maxAnswer bounds one answer of a registry.
const maxAnswer = 16 << 20

// ErrNotFound is a registry's 404: no such server or version.
var ErrNotFound = errors.New("not found in the registry")

// Client asks one MCP registry. Its zero HTTP uses http.DefaultClient.
type Client struct {
	BaseURL string // e.g. https://registry.modelcontextprotocol.io, no trailing slash
	HTTP    *http.Client
}

// ListOptions are GET /v0.1/servers's query parameters; zero values are
// left out.
type ListOptions struct {
	Search  string // a substring of the server's name
	Cursor  string // the previous page's metadata.nextCursor
	Limit   int
	Version string // "latest", or an exact version
}

// List returns one page of servers.
func (c *Client) List(ctx context.Context, o ListOptions) (*ServerList, error) {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("search", o.Search)
	set("cursor", o.Cursor)
	set("version", o.Version)
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	var l ServerList
	return &l, c.get(ctx, "/servers", q, &l)
}

// searchPages bounds the pages of 100 that Search reads.
const searchPages = 20

// Search returns up to limit servers, at their latest versions, that
// match every term: the registry's own search finds the first in the
// server's name, and each of the others must be in its name, title or
// description, in any case. It reads at most searchPages pages of 100.
func (c *Client) Search(ctx context.Context, terms []string, limit int) ([]ServerResponse, error) {
	if len(terms) == 0 {
		return nil, errors.New("search: want at least one term")
	}
	var found []ServerResponse
	cursor := ""
	for range searchPages {
		l, err := c.List(ctx, ListOptions{Search: terms[0], Version: "latest", Cursor: cursor, Limit: 100})
		if err != nil {
			return nil, err
		}
		for _, s := range l.Servers {
			if matchesAll(&s.Server, terms[1:]) && len(found) < limit {
				found = append(found, s)
			}
		}
		if cursor = l.Metadata.NextCursor; cursor == "" || len(found) >= limit {
			break
		}
	}
	return found, nil
}

// matchesAll: every term is in the server's name, title or description,
// in any case.
func matchesAll(s *ServerJSON, terms []string) bool {
	text := strings.ToLower(s.Name + " " + s.Title + " " + s.Description)
	for _, t := range terms {
		if !strings.Contains(text, strings.ToLower(t)) {
			return false
		}
	}
	return true
}

// Versions returns every version of the server called name, newest first.
func (c *Client) Versions(ctx context.Context, name string) (*ServerList, error) {
	var l ServerList
	return &l, c.get(ctx, "/servers/"+url.PathEscape(name)+"/versions", nil, &l)
}

// Get returns one version of the server called name; version "" is the
// latest.
func (c *Client) Get(ctx context.Context, name, version string) (*ServerResponse, error) {
	var r ServerResponse
	path := "/servers/" + url.PathEscape(name) + "/versions/" + url.PathEscape(cmp.Or(version, "latest"))
	if err := c.get(ctx, path, nil, &r); err != nil {
		return nil, err
	}
	if r.Server.Name == "" {
		return nil, fmt.Errorf("registry %s answered a server with no name for %s", c.BaseURL, name)
	}
	return &r, nil
}

func (c *Client) get(ctx context.Context, path string, q url.Values, out any) error {
	u := strings.TrimRight(c.BaseURL, "/") + APIPrefix + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("asking the registry: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("asking the registry %s: %w (is registry.url in the config right?)", c.BaseURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return fmt.Errorf("reading the registry's answer to GET %s: %w", u, err)
	}
	if len(body) > maxAnswer {
		return fmt.Errorf("the registry's answer to GET %s is larger than %d bytes", u, maxAnswer)
	}
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("GET %s: %w (%s)", u, ErrNotFound, problemText(body))
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the registry answered GET %s with HTTP %s: %s", u, resp.Status, problemText(body))
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("the registry's answer to GET %s is not what its API says: %w", u, err)
	}
	return nil
}

// problemText is an error body's message: the OpenAPI document's
// {"error": …}, or a problem document's detail or title.
func problemText(body []byte) string {
	var p struct{ Error, Detail, Title string }
	if json.Unmarshal(body, &p) == nil {
		if s := cmp.Or(p.Error, p.Detail, p.Title); s != "" {
			return s
		}
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return cmp.Or(s, "no message")
}
