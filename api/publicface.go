package api

import (
	"context"
	"net/http"
	"strings"

	"mcpx.dev/mcpx/api/public"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// The public face (docs/public.md): the listener a reverse proxy or
// Tailscale Funnel exposes to the internet. It serves the MCP endpoint to
// bearers of the face's OAuth access tokens (package api/public) with the
// rights each token carries, the face's OAuth paths, and nothing else:
// every other path is a 404 before anything is read, so the REST API,
// the dashboard, the events, the metrics and /healthz are not there.
//
// No header but Authorization is trusted there: not the tailnet's or the
// loopback face's identity (WhoIs never runs: the face has no Identify),
// not a cookie, not Mcpx-Pid (a public caller is never Local), not a
// forwarded address. Its callers are never the owner.

// Faces are New's handlers: Private for the unix socket, loopback TCP and
// the tailnet; Public for the public listener (nil without
// Options.Public).
type Faces struct {
	Private, Public http.Handler
}

// NewFaces is New, with the public face's handler beside it.
func NewFaces(opts Options) Faces {
	s := newServer(opts)
	f := Faces{Private: s.mount(routes(), opts)}
	if opts.Public != nil {
		opts.Public.SetApproverCheck(s.approverCheck)
		f.Public = s.publicHandler(opts.Public)
	}
	return f
}

// publicHandler serves the public face of f.
func (s *server) publicHandler(f *public.Face) http.Handler {
	return s.recoverer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case f.Owns(r.URL.Path):
			f.ServeHTTP(w, r)
		case isMCP(r.URL.Path):
			if server, ok := public.ServerPath(r.URL.Path); ok {
				s.servePublicMCP(w, r, f, server)
				return
			}
			fallthrough
		default:
			w.Header().Set("Content-Type", wire.MediaProblem)
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusNotFound)
			w.Write(notPublicBody) //nolint:errcheck // the client is gone if this fails
		}
	}))
}

var notPublicBody = []byte(`{"type":"` + wire.ProblemTypeBase + string(broker.KindNotFound) + `","title":"Not Found","status":404,` +
	`"detail":"only the MCP endpoint (/mcp, /mcp/<server>) and its OAuth sign-in are served on this address"}` + "\n")

// servePublicMCP admits a request of the MCP endpoint by its access token
// and serves it with the token's rights.
func (s *server) servePublicMCP(w http.ResponseWriter, r *http.Request, f *public.Face, server string) {
	if o := r.Header.Get("Origin"); o != "" && !strings.EqualFold(o, f.Origin()) {
		s.writeRPCDenial(w, r, deny(denyOrigin, forbidden("requests from other web origins are refused (Origin "+quote(o)+" is not this server's)")))
		return
	}
	tok, err := f.Authenticate(r, server)
	if err != nil {
		s.metrics.AuthDenied(denyPublicToken)
		f.Refuse(w, server, err)
		return
	}
	c := broker.Caller{Name: "oauth:" + tok.Approver + "/" + tok.Client, Via: wire.ViaPublic, Rights: tok.Rights}
	// The token admitted this request and goes no further: not to a
	// child, not to a url server (MCP servers must not pass tokens on).
	r.Header.Del(wire.HeaderAuthorization)
	r.Header.Del(wire.HeaderPid)
	s.serveMCP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
}
