package mcpclient

import "errors"

// ErrSessionExpired is returned (wrapped) when a streamable HTTP server
// answers 404 to a request carrying a session id: the session is over and
// the caller must connect again.
var ErrSessionExpired = errors.New("mcp http session expired")
