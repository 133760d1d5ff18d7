package doctor

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/mcp/oauth"
)

// SignIns checks the sign-in metadata chain of each url server of cfg
// that mcpx would sign in to (docs/oauth.md): its 401 and challenge, its
// protected resource metadata, its authorization server's metadata, and
// how mcpx would identify itself there. A broken chain is a problem
// naming the step that fails; each check is bounded by timeout.
func (d *Doctor) SignIns(ctx context.Context, cfg *config.Config, timeout time.Duration) {
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range cfg.Servers {
			if !yield(n) {
				return
			}
		}
	}) {
		s := cfg.Servers[name]
		if s.URL == "" || strings.Contains(s.URL, "${") || hasAuthorization(s.Headers) {
			continue
		}
		srv := oauth.Server{URL: s.URL}
		if o := s.OAuth; o != nil {
			srv.ClientID, srv.ClientMetadataURL = o.ClientID, o.ClientMetadataURL
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		steps := oauth.Chain(cctx, &http.Client{Timeout: timeout}, srv)
		cancel()
		last := steps[len(steps)-1]
		var chain []string
		for _, st := range steps[:len(steps)-1] {
			chain = append(chain, st.Name+": "+st.Detail)
		}
		if last.Err != nil {
			d.Problem("sign-in", name, fmt.Sprintf("the %s step fails: %s", last.Name, oneLine(last.Err.Error())),
				fixFor(name, last.Name))
			continue
		}
		d.OK("sign-in", name, strings.Join(append(chain, last.Name+": "+last.Detail), "; "))
	}
}

func fixFor(server, step string) string {
	switch step {
	case "challenge":
		return "check the server's url; `mcpx call " + server + ".<tool>` shows what it answers"
	case "client identity":
		return "register mcpx with the authorization server and set servers." + server + ".oauth.clientId (and clientSecret)"
	}
	return "the server's or its authorization server's metadata is not what the MCP authorization spec asks for (docs/oauth.md, \"The flow\"); its operator can fix it, or send a token with headers.Authorization instead"
}

func hasAuthorization(h map[string]string) bool {
	for k := range h {
		if strings.EqualFold(k, "Authorization") {
			return true
		}
	}
	return false
}
