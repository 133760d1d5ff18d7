package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"mcpx.dev/mcpx/api/wire"
	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/broker/config"
)

// jwtCaller admits the bearer of a signed token (package auth) with exactly
// the token's rights: Via "jwt", named by its subject, never the owner,
// never local. Every refusal is a 401 that says which rule refused it and
// nothing about the broker's keys.
func (s *server) jwtCaller(tok string) (broker.Caller, error) {
	if s.tokens == nil {
		return broker.Caller{}, deny(denyNoSignedTokens, unauthorized("this daemon accepts no signed tokens", ""))
	}
	cl, err := s.tokens.Verify(tok)
	if err != nil {
		hint := "ask the broker's owner for a new token (`mcpx token mint`)"
		if errors.Is(err, auth.ErrInvalid) {
			hint = "send the token exactly as `mcpx token mint` printed it, to the broker that minted it; " + hint
		}
		return broker.Caller{}, deny(tokenDenial(err), &broker.Error{Kind: kindUnauthorized, Op: "authenticate", Msg: err.Error(), Hint: hint})
	}
	scopes, err := broker.ParseScopes(cl.Scopes)
	if err != nil {
		return broker.Caller{}, deny(denyTokenInvalid, unauthorized(auth.ErrInvalid.Error(), ""))
	}
	c := broker.Caller{Name: cl.Subject, Via: wire.ViaJWT, Admin: cl.Admin, Scopes: scopes, ProjectConfig: cl.ProjectConfig,
		Servers: slices.Clone(cl.Servers), Roots: []string{}}
	if c.Servers == nil {
		c.Servers = []string{}
	}
	for _, root := range cl.Roots {
		if canon, ok := canonicalRoot(root); ok {
			c.Roots = append(c.Roots, canon)
		}
	}
	return c, nil
}

// canonicalRoot makes a granted root comparable with the broker's canonical
// cwds: absolute, cleaned, symlinks resolved. A root that is relative or
// does not exist (now) grants nothing.
func canonicalRoot(root string) (string, bool) {
	if !filepath.IsAbs(root) {
		return "", false
	}
	canon, err := filepath.EvalSymlinks(filepath.Clean(root))
	return canon, err == nil
}

// looksSigned tells a signed token (three dot-separated parts) from the
// daemon's own hex token.
func looksSigned(tok string) bool { return strings.Count(tok, ".") == 2 }

// The token routes change who may use the broker: admins only, and a
// caller that is not the owner mints no more than its own rights.
func (s *server) tokenAdmin(r *http.Request, what string) (broker.Caller, error) {
	c, _ := callerFrom(r.Context())
	if !c.Admin {
		return c, &broker.Error{Kind: broker.KindForbidden, Op: what, Msg: "only an admin may " + what,
			Hint: "use the daemon's unix socket as its owner, or a grant or token with admin"}
	}
	if s.tokens == nil {
		return c, &broker.Error{Kind: broker.KindUnavailable, Op: what, Msg: "this daemon has no token issuer"}
	}
	return c, nil
}

func (s *server) listTokens(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.tokenAdmin(r, "list tokens"); err != nil {
		return err
	}
	toks, keys := s.tokens.List()
	out := wire.TokenList{Identity: s.tokens.Identity(), Tokens: []wire.Token{}, Keys: []wire.TokenKey{}}
	for _, t := range toks {
		out.Tokens = append(out.Tokens, tokenDoc(t))
	}
	for _, k := range keys {
		doc := wire.TokenKey{ID: k.ID, Current: k.Current, Created: k.Created}
		if !k.Current {
			doc.RetiresAfter = k.LastExpiry
		}
		out.Keys = append(out.Keys, doc)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *server) mintToken(w http.ResponseWriter, r *http.Request) error {
	c, err := s.tokenAdmin(r, "mint tokens")
	if err != nil {
		return err
	}
	b, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req wire.TokenRequest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return badToken("body", fmt.Sprintf("the body is not a token request: %v", err),
			`send {"sub": "name", "servers": ["demo"], "roots": ["/abs/path"], "scopes": ["session"], "ttl": "24h", "admin": false}`)
	}
	var ttl time.Duration
	if req.TTL != "" {
		if ttl, err = time.ParseDuration(req.TTL); err != nil || ttl <= 0 {
			return badToken("ttl", fmt.Sprintf("ttl %q is not a positive duration", req.TTL), `write it as Go does: "90m", "24h", "720h"`)
		}
	}
	if _, err := broker.ParseScopes(req.Scopes); err != nil {
		return err
	}
	if err := within(c, req); err != nil {
		return err
	}
	tok, info, err := s.tokens.Mint(auth.Grant{Subject: req.Subject, Servers: req.Servers, Roots: req.Roots,
		Scopes: req.Scopes, Admin: req.Admin, ProjectConfig: req.ProjectConfig, TTL: ttl})
	if errors.Is(err, auth.ErrGrant) {
		return badToken("", strings.TrimPrefix(err.Error(), auth.ErrGrant.Error()+": "), "")
	}
	if err != nil {
		return err // internal: logged, not sent
	}
	s.log.Info("token minted", "id", info.ID, "sub", info.Subject, "by", c.Name, "expires", info.ExpiresAt)
	writeJSON(w, http.StatusOK, wire.MintedToken{Token: tok, Info: tokenDoc(info)})
	return nil
}

// within refuses a token request that grants more than c has. The owner
// has every right.
func within(c broker.Caller, req wire.TokenRequest) error {
	if c.Owner {
		return nil
	}
	for _, sv := range req.Servers {
		if !c.MayUse(sv) {
			return forbiddenGrant("servers", sv)
		}
	}
	for _, root := range req.Roots {
		canon, ok := canonicalRoot(root)
		if !ok || !c.MayUseDir(canon) {
			return forbiddenGrant("roots", root)
		}
	}
	if req.ProjectConfig && !c.ProjectConfig {
		return forbiddenGrant("projectConfig", "true")
	}
	if c.Scopes != nil {
		if req.Scopes == nil {
			return forbiddenGrant("scopes", "(all)")
		}
		for _, sc := range req.Scopes {
			if sc == "*" || !c.MayUseScope(config.ScopeKind(sc)) {
				return forbiddenGrant("scopes", sc)
			}
		}
	}
	return nil
}

func forbiddenGrant(field, v string) error {
	return &broker.Error{Kind: broker.KindForbidden, Op: "mint token", Field: field,
		Msg:  fmt.Sprintf("%s %s: a token may grant only rights its minter has", field, v),
		Hint: "narrow the request to your own rights (`mcpx whoami` or GET /v1/whoami shows them), or mint on the daemon's unix socket"}
}

func badToken(field, msg, hint string) error {
	return &broker.Error{Kind: broker.KindBadRequest, Op: "mint token", Field: field, Msg: msg, Hint: hint}
}

func (s *server) revokeToken(w http.ResponseWriter, r *http.Request) error {
	c, err := s.tokenAdmin(r, "revoke tokens")
	if err != nil {
		return err
	}
	info, err := s.tokens.Revoke(param(r, "id"))
	if err != nil {
		return &broker.Error{Kind: broker.KindNotFound, Op: "revoke token", Msg: err.Error()}
	}
	s.log.Info("token revoked", "id", info.ID, "sub", info.Subject, "by", c.Name)
	writeJSON(w, http.StatusOK, tokenDoc(info))
	return nil
}

func (s *server) rotateTokenKey(w http.ResponseWriter, r *http.Request) error {
	c, err := s.tokenAdmin(r, "rotate the token key")
	if err != nil {
		return err
	}
	k, err := s.tokens.Rotate()
	if err != nil {
		return err
	}
	s.log.Info("token key rotated", "kid", k.ID, "by", c.Name)
	writeJSON(w, http.StatusOK, wire.TokenKey{ID: k.ID, Current: k.Current, Created: k.Created})
	return nil
}

func tokenDoc(t auth.Info) wire.Token {
	return wire.Token{ID: t.ID, Subject: t.Subject, Servers: t.Servers, Roots: t.Roots, Scopes: t.Scopes,
		Admin: t.Admin, ProjectConfig: t.ProjectConfig, KeyID: t.KeyID, IssuedAt: t.IssuedAt, ExpiresAt: t.ExpiresAt, Revoked: t.Revoked}
}
