package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"

	"mcpx.dev/mcpx/auth/access"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// The owner's list and revoke of the public face's OAuth clients and
// their tokens (docs/public.md): GET /v1/public/clients and
// POST /v1/public/revoke, for `mcpx token ls|revoke` and the dashboard.
// Only the owner: the unix socket's user, or on loopback TCP the bearer
// of the daemon's or an owner's token (a dashboard signed in with one).
// A tailnet admin is not the owner: these clients act with the owner's
// rights.

// ownerOfPublic refuses a caller who is not the owner, and a daemon with
// no public face when needed.
func (s *server) ownerOfPublic(r *http.Request, op string, needFace bool) error {
	if c, _ := callerFrom(r.Context()); !c.Owner {
		return &broker.Error{Kind: broker.KindForbidden, Op: op, Msg: "only the daemon's owner lists and revokes the public face's OAuth clients",
			Hint: "run `mcpx token ls` or `mcpx token revoke ID` on the daemon's machine as its user"}
	}
	if s.public == nil && needFace {
		return &broker.Error{Kind: broker.KindUnavailable, Op: op, Msg: "this daemon serves no public face",
			Hint: "start it with `mcpx serve --public-listen ADDR --public-url URL` or `--public funnel` (docs/public.md)"}
	}
	return nil
}

// listPublicClients is GET /v1/public/clients: with no public face, none.
func (s *server) listPublicClients(w http.ResponseWriter, r *http.Request) error {
	if err := s.ownerOfPublic(r, "list OAuth clients", false); err != nil {
		return err
	}
	if s.public == nil {
		writeJSON(w, http.StatusOK, wire.PublicClients{Clients: []wire.PublicClient{}})
		return nil
	}
	out := wire.PublicClients{Served: true, Issuer: s.public.External(), Clients: []wire.PublicClient{}}
	for _, ct := range s.public.Clients() {
		out.Clients = append(out.Clients, publicClientDoc(ct))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func publicClientDoc(ct access.ClientTokens) wire.PublicClient {
	c := ct.Client
	doc := wire.PublicClient{ID: c.ID, Name: c.Name, Registration: c.Registration(), RedirectHosts: []string{},
		Created: c.Created, SignIns: ct.SignIns, Registered: ct.Registered, Tokens: []wire.PublicToken{}}
	for _, ru := range c.RedirectURIs {
		if u, err := url.Parse(ru); err == nil && !slices.Contains(doc.RedirectHosts, u.Host) {
			doc.RedirectHosts = append(doc.RedirectHosts, u.Host)
		}
	}
	for _, t := range ct.Tokens {
		doc.Tokens = append(doc.Tokens, wire.PublicToken{ID: t.ID, Resource: t.Resource, Rights: t.Rights, Approver: t.Approver,
			Created: t.Created, Expires: t.Expires})
	}
	return doc
}

// revokePublic is POST /v1/public/revoke.
func (s *server) revokePublic(w http.ResponseWriter, r *http.Request) error {
	if err := s.ownerOfPublic(r, "revoke", true); err != nil {
		return err
	}
	b, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req wire.PublicRevoke
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.ID == "" {
		return &broker.Error{Kind: broker.KindBadRequest, Op: "revoke", Field: "body", Msg: "the body is not a revocation",
			Hint: `send {"id": "<a token's or a client's id, as mcpx token ls shows it>"}`}
	}
	rv, err := s.public.Revoke(req.ID)
	switch {
	case errors.Is(err, access.ErrNoSuchID):
		return &broker.Error{Kind: broker.KindNotFound, Op: "revoke", Field: "id", Msg: "no OAuth token or client of the public face has id " + quote(req.ID),
			Hint: "`mcpx token ls` lists them"}
	case err != nil:
		return err
	}
	s.log.Info("public face: revoked by the owner", "client", rv.Client, "token", rv.Token, "tokens", rv.Tokens)
	writeJSON(w, http.StatusOK, wire.PublicRevoked{Client: rv.Client, Name: rv.Name, Token: rv.Token, Tokens: rv.Tokens})
	return nil
}
