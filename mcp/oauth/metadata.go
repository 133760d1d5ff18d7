package oauth

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// ClientMetadata is mcpx's Client ID Metadata Document
// (draft-ietf-oauth-client-id-metadata-document, the MCP spec's preferred
// client identity): the owner publishes it at clientID, an https URL, and
// names that URL as servers.*.oauth.clientMetadataUrl. mcpx is a public
// native client: no secret, the authorization code and refresh grants,
// its redirect the CLI's loopback listener (any port, RFC 8252 section
// 7.3; port > 0 also lists that port's, for `mcpx auth login --port` and
// authorization servers that compare ports).
type ClientMetadata struct {
	ClientID                string   `json:"client_id"`
	ClientName              string   `json:"client_name"`
	ClientURI               string   `json:"client_uri,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	ApplicationType         string   `json:"application_type"`
}

// NewClientMetadata returns the document to publish at clientID, named
// name ("" = mcpx), or an error saying what clientID lacks.
func NewClientMetadata(clientID, name string, port int) (*ClientMetadata, error) {
	if err := CheckClientMetadataURL(clientID); err != nil {
		return nil, err
	}
	if name == "" {
		name = "mcpx"
	}
	if port < 0 || port > 65535 {
		return nil, fmt.Errorf("the port must be between 1 and 65535 (0: any), got %d", port)
	}
	redirects := []string{"http://127.0.0.1/callback"}
	if port > 0 {
		redirects = append(redirects, fmt.Sprintf("http://127.0.0.1:%d/callback", port))
	}
	return &ClientMetadata{ClientID: clientID, ClientName: name, RedirectURIs: redirects,
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		TokenEndpointAuthMethod: "none", ApplicationType: "native"}, nil
}

// CheckClientMetadataURL says why u cannot be a client id metadata
// document's URL: it must be https, with a path, and without a fragment,
// credentials or dot segments (the draft's section 3).
func CheckClientMetadataURL(u string) error {
	p, err := url.Parse(u)
	switch {
	case err != nil:
		return fmt.Errorf("the client metadata URL %q does not parse: %v", u, err)
	case p.Scheme != "https" || p.Host == "":
		return fmt.Errorf("the client metadata URL must be an https URL, such as https://example.com/mcpx/client.json, got %q", u)
	case strings.Trim(p.Path, "/") == "":
		return fmt.Errorf("the client metadata URL must have a path, such as https://example.com/mcpx/client.json, got %q", u)
	case p.Fragment != "" || p.User != nil:
		return fmt.Errorf("the client metadata URL may hold no fragment and no user or password, got %q", u)
	case strings.Contains("/"+p.Path+"/", "/./") || strings.Contains("/"+p.Path+"/", "/../"):
		return fmt.Errorf("the client metadata URL may hold no . or .. segment, got %q", u)
	}
	return nil
}

// JSON is the document as published: indented, with a final newline.
func (m *ClientMetadata) JSON() []byte {
	b, _ := json.MarshalIndent(m, "", "  ")
	return append(b, '\n')
}
