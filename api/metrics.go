package api

import (
	"bytes"
	"errors"
	"net/http"

	"mcpx.dev/mcpx/api/metrics"
	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/broker"
)

// The reasons authentication denials are counted under
// (mcpx_auth_denials_total): a fixed list, so a caller cannot grow the
// series by what it sends.
const (
	denyNotLoopback       = "not-loopback"     // TCP from an address that is not loopback
	denyOrigin            = "origin"           // browser guard: an Origin header
	denyHost              = "host"             // browser guard: a Host that is not the listener's
	denyNoClientHeader    = "no-client-header" // browser guard: no Mcpx-Client
	denyPeer              = "peer-credentials" // unix socket: unreadable peer credentials
	denyUID               = "uid"              // unix socket: another user
	denyUserNS            = "user-namespace"   // unix socket: a process in another user namespace (a confined child)
	denyMalformed         = "malformed-authorization"
	denyNoTCP             = "tcp-off"             // the daemon admits no TCP callers
	denyNoToken           = "no-token"            // loopback TCP without a bearer token
	denyWrongToken        = "wrong-token"         // loopback TCP with a token that is not the daemon's
	denyDaemonTokenRemote = "daemon-token-remote" // the daemon's token on the tailnet
	denyOwnerToken        = "owner-token"         // loopback TCP with an owner token that is revoked or unknown
	denyOwnerTokenRemote  = "owner-token-remote"  // an owner token on the tailnet
	denyNoSignedTokens    = "signed-tokens-off"
	denyTokenInvalid      = "token-invalid"
	denyTokenExpired      = "token-expired"
	denyTokenNotYetValid  = "token-not-yet-valid"
	denyTokenWrongBroker  = "token-wrong-broker"
	denyTokenRevoked      = "token-revoked"
	denyTokenMinter       = "token-minter"
	denyIdentity          = "identity"     // the listener's Identify refused (the tailnet: no grant, WhoIs failed)
	denyPublicToken       = "public-token" // the public face: no access token, or one it does not admit
	denyRights            = "rights"       // admitted, but the caller's rights refuse the request (403)
	denyOther             = "other"
)

// denied is an authentication refusal with its counted reason. It wraps
// the *broker.Error the caller is answered with.
type denied struct {
	reason string
	err    error
}

func (d *denied) Error() string { return d.err.Error() }
func (d *denied) Unwrap() error { return d.err }

// deny tags err, if any, with reason.
func deny(reason string, err error) error {
	if err == nil {
		return nil
	}
	var d *denied
	if errors.As(err, &d) {
		return err // the innermost reason is the more precise
	}
	return &denied{reason: reason, err: err}
}

func denialReason(err error) string {
	if d := (*denied)(nil); errors.As(err, &d) {
		return d.reason
	}
	return denyOther
}

// tokenDenial names a signed token's refusal by package auth's error.
func tokenDenial(err error) string {
	switch {
	case errors.Is(err, auth.ErrExpired):
		return denyTokenExpired
	case errors.Is(err, auth.ErrNotYetValid):
		return denyTokenNotYetValid
	case errors.Is(err, auth.ErrWrongBroker):
		return denyTokenWrongBroker
	case errors.Is(err, auth.ErrRevoked):
		return denyTokenRevoked
	case errors.Is(err, auth.ErrMinter):
		return denyTokenMinter
	}
	return denyTokenInvalid
}

// countRefusal counts a handler's 403, and the 404 that hides a server
// from a caller that may not use it, as a denial by the caller's rights.
func (s *server) countRefusal(err error) {
	if broker.IsRefusal(err) {
		s.metrics.AuthDenied(denyRights)
	}
}

// metrics answers the Prometheus metrics (package metrics) to an admin or
// a caller with the metrics right (a Prometheus server's grant or token):
// they span every server and caller. Anyone else is refused with 403, as
// for /v1/stats; the figures carry no session, key, cwd or caller, but a
// caller limited to some servers must not learn what the others do.
func (s *server) getMetrics(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	if s.metrics == nil {
		return &broker.Error{Kind: broker.KindUnavailable, Op: "metrics", Msg: "this handler has no metrics"}
	}
	if !c.Rights.Metrics() {
		return &broker.Error{Kind: broker.KindForbidden, Op: "metrics",
			Msg:  "only a caller with the metrics or admin right may read the metrics: they cover every server",
			Hint: "scrape with the daemon's own token (loopback TCP), a metrics token (`mcpx token mint --sub prometheus --metrics`) or a tailnet grant of {\"metrics\": true}"}
	}
	var buf bytes.Buffer
	if err := s.metrics.Write(&buf); err != nil {
		return &broker.Error{Kind: broker.KindInternal, Op: "metrics", Err: err}
	}
	h := w.Header()
	h.Set("Content-Type", metrics.ContentType)
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes()) //nolint:errcheck // the client is gone if this fails
	return nil
}
