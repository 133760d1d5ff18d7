package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
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
	if err := broker.CheckRights(cl.Rights); err != nil {
		return broker.Caller{}, deny(denyTokenInvalid, unauthorized(auth.ErrInvalid.Error(), ""))
	}
	// A root that does not exist (now) grants nothing.
	return broker.Caller{Name: cl.Subject, Via: wire.ViaJWT, Token: cl.ID, Rights: orNone(cl.Rights.Canonical())}, nil
}

// looksSigned tells a signed token (three dot-separated parts) from the
// daemon's own hex token.
func looksSigned(tok string) bool { return strings.Count(tok, ".") == 2 }

// The token routes change who may use the broker: admins only, and a
// caller that is not the owner mints no more than its own rights.
func (s *server) tokenAdmin(r *http.Request, what string) (broker.Caller, error) {
	c, _ := callerFrom(r.Context())
	if !c.Rights.Admin() {
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
			`send {"sub": "name", "servers": ["demo"], "roots": ["/abs/path"], "scopes": ["session"], "tools": ["demo.get_*"], "ttl": "24h", "admin": false}`)
	}
	var ttl time.Duration
	if req.TTL != "" {
		if ttl, err = time.ParseDuration(req.TTL); err != nil || ttl <= 0 {
			return badToken("ttl", fmt.Sprintf("ttl %q is not a positive duration", req.TTL), `write it as Go does: "90m", "24h", "720h"`)
		}
	}
	rule := req.Rule.Granted()
	if err := broker.CheckRights(rights.Rights{rule}); err != nil {
		return err
	}
	if err := within(c, rule); err != nil {
		return err
	}
	tok, info, err := s.tokens.Mint(auth.Grant{Subject: req.Subject, Rights: rights.Rights{rule}, TTL: ttl, Minter: minter(c)})
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

// within refuses a token request whose rule grants more than c has: each
// use it allows must be allowed by one of c's own rules (rights.Covers).
// The owner has every right. A root that does not exist grants nothing
// and is refused.
func within(c broker.Caller, rule rights.Rule) error {
	if c.Owner {
		return nil
	}
	canon := rule
	canon.Roots = make([]string, len(rule.Roots))
	for i, root := range rule.Roots {
		var ok bool
		if canon.Roots[i], ok = rights.CanonicalRoot(root); !ok {
			return forbiddenGrant("roots", root)
		}
	}
	var ex *rights.Excess
	if errors.As(c.Rights.Covers(canon), &ex) {
		return forbiddenGrant(ex.Field, ex.Value)
	}
	return nil
}

func forbiddenGrant(field, v string) error {
	hint := "narrow the request to your own rights (`mcpx whoami` or GET /v1/whoami shows them), or mint on the daemon's unix socket"
	if field == "tools" {
		// rights.Covers: each pattern must lie provably within one of the
		// minter's, and a minter with patterns names its tokens' tools.
		hint = "your rights limit tools: name the token's \"tools\", each one of your patterns, a tool name one of them matches, " +
			"or a prefix glob within one of your prefix globs (\"github.get_*\" within \"github.*\"); " + hint
	}
	return &broker.Error{Kind: broker.KindForbidden, Op: "mint token", Field: field,
		Msg:  fmt.Sprintf("%s %s: a token may grant only rights its minter has", field, v),
		Hint: hint}
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
	s.revocations.notify()
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
	doc := wire.Token{ID: t.ID, Subject: t.Subject, Rights: orNone(t.Rights), KeyID: t.KeyID, IssuedAt: t.IssuedAt, ExpiresAt: t.ExpiresAt, Revoked: t.Revoked}
	if m := t.Minter; m.Via != "" {
		doc.Minter = &wire.TokenMinter{Name: m.Name, Via: m.Via, Owner: m.Owner, Token: m.Token}
	}
	return doc
}

// minter is the auth.Minter of a token c mints: it dies with c's rights.
func minter(c broker.Caller) auth.Minter {
	return auth.Minter{Name: c.Name, Via: c.Via, Owner: c.Owner, Token: c.Token, Rights: c.Rights}
}

// seen tells the issuer the rights a tailnet caller has now, on each of its
// requests (a refused one names the caller with no rights): the tokens it
// minted die with them (auth.Issuer.Seen). The tailnet is the only place a
// minter's rights can change without the broker's knowing; a token minter's
// are its token's, checked at each use.
func (s *server) seen(c broker.Caller) {
	if s.tokens == nil || c.Via != wire.ViaTailnet || c.Name == "" {
		return
	}
	if err := s.tokens.Seen(c.Via, c.Name, c.Rights); err != nil {
		s.log.Warn("recording a token minter's rights", "minter", c.Name, "err", err)
	}
}
