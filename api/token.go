package api

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// kindUnauthorized answers a TCP request without the daemon's token.
const kindUnauthorized broker.Kind = wire.KindUnauthorized

// NewToken returns a fresh bearer token: 32 random bytes, hex-encoded.
func NewToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// checkToken admits a TCP request whose Authorization value authz is the
// daemon's token as "Bearer <token>", compared in constant time. The answer to
// anyone else says what is missing and where the owner finds it, but names
// no path: the caller may be another user of this machine.
func (s *server) checkToken(authz string) error {
	got, ok := bearer(authz)
	switch {
	case len(s.token) == 0:
		return deny(denyNoTCP, unauthorized("this daemon admits no TCP callers", "use its unix socket"))
	case !ok:
		return deny(denyNoToken, unauthorized("a bearer token is required on TCP",
			"send `Authorization: Bearer <token>`; the daemon's user finds the token in the daemon record (`mcpx daemon info`), or connect over the unix socket"))
	case subtle.ConstantTimeCompare([]byte(got), s.token) != 1:
		return deny(denyWrongToken, unauthorized("the bearer token is not this daemon's",
			"a restarted daemon has a new token: read it again from the daemon record (`mcpx daemon info`); for a client's config, `mcpx install <client> --http` writes an owner token that survives restarts"))
	}
	return nil
}

// challenge adds to a 401 on loopback TCP the WWW-Authenticate header RFC
// 9110 asks of it, in the scheme "Mcpx": not Bearer, which sends MCP
// clients into OAuth discovery (RFC 9728, the MCP authorization spec), and
// no resource_metadata (faces.go). The tailnet's 401s carry none: no
// client there needs credentials but its tailnet identity.
func (s *server) challenge(w http.ResponseWriter, r *http.Request, err error) {
	if e := (*broker.Error)(nil); !errors.As(err, &e) || e.Kind != kindUnauthorized {
		return
	}
	if _, remote, _ := networkListener(r); !remote {
		w.Header().Set("WWW-Authenticate", `Mcpx realm="mcpx"`)
	}
}

// bearer returns the token of an "Authorization: Bearer <token>" value.
func bearer(v string) (string, bool) {
	scheme, tok, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

func unauthorized(msg, hint string) error {
	return &broker.Error{Kind: kindUnauthorized, Op: "authenticate", Msg: msg, Hint: hint}
}
