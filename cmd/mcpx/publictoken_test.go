package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// checkTokenRevokeClient: a client registered on the running daemon's
// public face (register posts a DCR body there) is listed by
// `mcpx token ls`; `mcpx token revoke <its id>` over the unix socket
// revokes it, after which it is listed no more and a second revoke says
// there is no such id.
func checkTokenRevokeClient(t *testing.T, sock, state string, register func(body string) (int, string)) {
	t.Helper()
	code, body := register(`{"client_name": "Claude", "redirect_uris": ["https://claude.ai/api/mcp/auth_callback"]}`)
	var reg struct {
		ClientID string `json:"client_id"`
	}
	if code != 201 || json.Unmarshal([]byte(body), &reg) != nil || reg.ClientID == "" {
		t.Fatalf("register: %d %s", code, body)
	}
	token := func(args ...string) (int, string) {
		var out strings.Builder
		code := run(t.Context(), append([]string{"token", "--broker", sock, "--state-dir", state}, args...), strings.NewReader(""), &out, &out)
		return code, out.String()
	}
	if code, out := token("ls"); code != exitOK || !strings.Contains(out, reg.ClientID+"  Claude  dcr") || !strings.Contains(out, "claude.ai") {
		t.Errorf("token ls: %d\n%s", code, out)
	}
	if code, out := token("revoke", reg.ClientID); code != exitOK || !strings.Contains(out, "revoked OAuth client Claude ("+reg.ClientID+") and its 0 tokens") {
		t.Errorf("token revoke %s: %d\n%s", reg.ClientID, code, out)
	}
	if code, out := token("ls"); code != exitOK || strings.Contains(out, reg.ClientID) {
		t.Errorf("token ls after the revoke: %d\n%s", code, out)
	}
	if code, out := token("revoke", reg.ClientID); code == exitOK || !strings.Contains(out, reg.ClientID) {
		t.Errorf("token revoke %s again: %d\n%s", reg.ClientID, code, out)
	}
}
