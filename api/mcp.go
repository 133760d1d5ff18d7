package api

import (
	"net/http"
	"slices"
	"strings"

	"mcpx.dev/mcpx/observe/tracing"

	"mcpx.dev/mcpx/api/mcp"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// The MCP endpoint (package api/mcp) at /mcp, every server the caller may
// use, and /mcp/{server}, one. MCP clients send no Mcpx-Client header, so
// the browser guard here is the MCP specification's: a foreign Origin is
// refused (an Origin of this listener's own is not), the Host check of
// networkListener refuses DNS rebinding, and a POST must be
// Content-Type: application/json, which a web page cannot send across
// origins without a preflight mcpx never answers (api/mcp checks it).

// mcpPath is the endpoint's path; one server's is mcpPath + "/" + name.
const mcpPath = "/mcp"

// isMCP reports whether path is the endpoint's.
func isMCP(path string) bool {
	return path == mcpPath || strings.HasPrefix(path, mcpPath+"/")
}

// mcpGuard is browserGuard for the MCP endpoint.
func mcpGuard(r *http.Request) error {
	if !sameOrigin(r) {
		return deny(denyOrigin, forbidden("requests from other web origins are refused (Origin "+quote(r.Header.Get("Origin"))+" is not this broker's)"))
	}
	return nil
}

// serveMCP hands an authenticated request to the endpoint.
func (s *server) serveMCP(w http.ResponseWriter, r *http.Request) {
	if s.mcp == nil {
		s.writeProblem(w, r, &broker.Error{Kind: broker.KindUnavailable, Op: "mcp", Msg: "this daemon does not serve MCP"})
		return
	}
	if tracing.Enabled() {
		r = r.WithContext(tracing.FromHeader(r.Context(), r.Header))
	}
	c, _ := callerFrom(r.Context())
	cc, err := callContext(r, c)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	server := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, mcpPath), "/")
	if strings.Contains(server, "/") {
		s.writeProblem(w, r, &broker.Error{Kind: broker.KindNotFound, Op: "route", Msg: "no such endpoint: " + r.URL.Path,
			Hint: "the MCP endpoint is /mcp, or /mcp/<server> for one server"})
		return
	}
	// A server the caller cannot use is 404 before MCP begins; a request
	// of a session was checked when it opened (the broker refuses a
	// server that has gone since, as on every call).
	if server != "" && r.Header.Get(jsonrpc.HeaderSessionID) == "" {
		if _, err := s.b.ServerAt(broker.Request{Caller: c, Context: cc, Server: server}); err != nil {
			s.writeProblem(w, r, err)
			return
		}
	}
	if r.Method == http.MethodGet {
		// The GET stream is idle by nature: it ends when the drain
		// begins, so that it does not hold the daemon's stop.
		ctx, cancel := untilDrain(r)
		defer cancel()
		r = r.WithContext(ctx)
	}
	mode := r.URL.Query().Get("mode")
	if mode != "" && !slices.Contains(rights.MCPModes, mode) {
		s.writeProblem(w, r, &broker.Error{Kind: broker.KindBadRequest, Op: "mcp", Field: "mode", Msg: "unknown mode " + quote(mode),
			Hint: "/mcp?mode= is tools (every tool), code (search and run) or both"})
		return
	}
	s.mcp.ServeHTTP(w, r, mcp.Request{Caller: c, Context: cc, Server: server, Mode: mode, MaxBody: s.maxBody})
}
