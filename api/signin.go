package api

import (
	"fmt"
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

// authRedirect completes a sign-in a caller was asked to make by URL-mode
// elicitation: the browser comes back here from the authorization server
// (broker.SetSignInRedirect) and is told, in a line, how it went.
func (s *server) authRedirect(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	st, err := s.b.AuthRedirect(r.Context(), q.Get(wire.QueryState), q.Get(wire.QueryCode), q.Get(wire.QueryIss), q.Get(wire.QueryError))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", wire.MediaText+"; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "Signed in to %s. You can close this tab: the call goes on.\n", st.Server)
	return nil
}

func authStatusDoc(st broker.AuthStatus) wire.AuthStatus {
	return wire.AuthStatus{Server: st.Server, Caller: st.Caller, SignedIn: st.SignedIn, NeedsSignIn: st.NeedsSignIn, Reason: st.Reason,
		Issuer: st.Issuer, Client: st.Client, Scopes: st.Scopes, Expiry: st.Expiry, Refresh: st.Refresh, SignedInAt: st.SignedInAt}
}
