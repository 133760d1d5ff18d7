package openapi

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// oauth is the token source of the clientCredentials flow the document
// declares, when Config.OAuth2 gives the client's credentials; nil when
// either is missing. Tokens are fetched on first use, cached and renewed
// before they expire (oauth2.ReuseTokenSource); scopes are the union of
// those the selected operations' requirements name, unless configured.
//
// all says every operation gets the token: no operation's security names
// the flow, but tokenUrl is configured.
func (o *opener) oauth(a *api) (ts oauth2.TokenSource, all bool, err error) {
	oc := o.cfg.OAuth2
	if oc == nil {
		return nil, false, nil
	}
	c := compiler{doc: a.doc}
	var tokenURL string
	var scopes []string
	used := false
	for _, op := range a.ops {
		if op.oauth {
			used = true
			for _, s := range op.scopes {
				if !slices.Contains(scopes, s) {
					scopes = append(scopes, s)
				}
			}
		}
	}
	if a.doc.Components != nil {
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range a.doc.Components.SecuritySchemes {
				if !yield(k) {
					return
				}
			}
		}) {
			if f := c.clientCredentials(name); f != nil && tokenURL == "" {
				tokenURL = f.TokenURL
			}
		}
	}
	if oc.TokenURL != "" {
		tokenURL = oc.TokenURL
	}
	if !used && oc.TokenURL == "" {
		return nil, false, fmt.Errorf("server %s: openapi.oauth2 is set, but no selected operation's security uses an OAuth2 clientCredentials flow: remove it, or set its tokenUrl to send the token anyway", o.cfg.Server)
	}
	if tokenURL == "" {
		return nil, false, fmt.Errorf("server %s: openapi.oauth2: the document's clientCredentials flow has no tokenUrl: set openapi.oauth2.tokenUrl", o.cfg.Server)
	}
	if oc.Scopes != nil {
		scopes = oc.Scopes
	}
	id, err := expandEnv(oc.ClientID, o.cfg.Getenv)
	if err != nil {
		return nil, false, fmt.Errorf("server %s: openapi.oauth2.clientId: %w", o.cfg.Server, err)
	}
	secret, err := expandEnv(oc.ClientSecret, o.cfg.Getenv)
	if err != nil {
		return nil, false, fmt.Errorf("server %s: openapi.oauth2.clientSecret: %w", o.cfg.Server, err)
	}
	cc := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: tokenURL, Scopes: scopes}
	// The token source outlives Open's context: it lives as long as the
	// namespace, each fetch bounded by the client's timeouts.
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, o.cfg.HTTPClient)
	return oauth2.ReuseTokenSource(nil, cc.TokenSource(ctx)), !used, nil
}

// tokenError is err without what a token endpoint may echo back: only
// the OAuth2 error code and status are kept.
func tokenError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return fmt.Errorf("the token endpoint answered %s (%s)", re.Response.Status, re.ErrorCode)
		}
		return fmt.Errorf("the token endpoint answered %s", re.Response.Status)
	}
	return err
}
