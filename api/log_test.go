package api_test

import (
	"net/http"
	"strings"
	"testing"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// TestLogAdminOnly: the log names paths and children's stderr: a caller
// that is not an admin is refused; an admin of a handler with no log file
// is told there is none; a bad query names its field.
func TestLogAdminOnly(t *testing.T) {
	url := serveIdentified(t, func(r *http.Request) (broker.Caller, error) {
		return broker.Caller{Name: "dev@example.com", Via: wire.ViaTailnet, Rights: rights.Rights{{Servers: []string{}, Admin: r.URL.Query().Get("who") == "admin"}}}, nil
	})
	if code, body := get(t, url+"/v1/log?who=peer"); code != http.StatusForbidden || !strings.Contains(string(body), "only an admin") {
		t.Errorf("non-admin /v1/log: %d %s", code, body)
	}
	if code, body := get(t, url+"/v1/log?who=admin"); code != http.StatusServiceUnavailable || !strings.Contains(string(body), "no log file") {
		t.Errorf("/v1/log with no log file: %d %s", code, body)
	}
}
