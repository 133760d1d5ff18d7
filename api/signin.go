package api

import (
	"net/http"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// authLogin begins a sign-in to a url server (docs/oauth.md): the CLI's
// loopback redirect URI in, the authorization URL out.
func (s *server) authLogin(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	var req wire.AuthLoginRequest
	if err := s.readDocument(w, r, &req, "sign-in request"); err != nil {
		return err
	}
	server := param(r, "server")
	l, err := s.b.AuthBegin(r.Context(), c, server, req.RedirectURI)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.AuthLogin{Server: server, AuthorizationURL: l.URL, State: l.State, Expires: l.Expires})
	return nil
}

// authCallback completes it with the authorization response.
func (s *server) authCallback(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	var req wire.AuthCallback
	if err := s.readDocument(w, r, &req, "authorization response"); err != nil {
		return err
	}
	st, err := s.b.AuthComplete(r.Context(), c, param(r, "server"), req.State, req.Code, req.Iss)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, authStatusDoc(st))
	return nil
}

func (s *server) authStatus(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	doc := wire.AuthStatusList{Servers: []wire.AuthStatus{}}
	for _, st := range s.b.AuthStatuses(c) {
		doc.Servers = append(doc.Servers, authStatusDoc(st))
	}
	writeJSON(w, http.StatusOK, doc)
	return nil
}

func (s *server) authLogout(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	server := param(r, "server")
	revoked, err := s.b.AuthLogout(r.Context(), c, server)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.AuthLogout{Server: server, Revoked: revoked})
	return nil
}

func authStatusDoc(st broker.AuthStatus) wire.AuthStatus {
	return wire.AuthStatus{Server: st.Server, SignedIn: st.SignedIn, NeedsSignIn: st.NeedsSignIn, Reason: st.Reason,
		Issuer: st.Issuer, Client: st.Client, Scopes: st.Scopes, Expiry: st.Expiry, Refresh: st.Refresh, SignedInAt: st.SignedInAt}
}
