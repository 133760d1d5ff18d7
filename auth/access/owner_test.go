package access_test

import (
	"errors"
	"testing"
	"time"

	"mcpx.dev/mcpx/auth/access"
)

// TestClientsAndRevokeID: Clients lists registered clients and clients
// known by their tokens only (a CIMD client), each with its live access
// tokens and sign-ins; RevokeID takes a refresh token's id as well as an
// access token's (the whole sign-in goes), a client's id (every token, and
// its registration), and refuses an id that is neither.
func TestClientsAndRevokeID(t *testing.T) {
	t.Parallel()
	st, err := access.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	reg, err := st.Register("Claude", []string{"https://claude.ai/cb"})
	if err != nil {
		t.Fatal(err)
	}
	cimd := "https://app.example/client.json"
	if _, _, _, err := st.IssuePair(access.Grant{Client: cimd, ClientName: "App", Resource: "https://m.example/mcp"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	cs := st.Clients()
	if len(cs) != 2 || cs[0].Client.ID != cimd || cs[0].Registered || cs[0].Client.Registration() != access.RegisteredCIMD ||
		len(cs[0].Tokens) != 1 || cs[0].SignIns != 1 || cs[1].Client.ID != reg.ID || !cs[1].Registered || cs[1].Client.Registration() != access.RegisteredDCR {
		t.Fatalf("clients: %+v", cs)
	}
	var refresh string
	for _, tk := range st.List() {
		if tk.Refresh {
			refresh = tk.ID
		}
	}
	if rv, err := st.RevokeID(refresh); err != nil || rv.Tokens != 2 || rv.Client != cimd {
		t.Errorf("revoking a refresh token's id: %+v, %v", rv, err)
	}
	if rv, err := st.RevokeID(reg.ID); err != nil || rv.Token != "" || rv.Tokens != 0 {
		t.Errorf("revoking a registered client: %+v, %v", rv, err)
	}
	if _, ok := st.Client(reg.ID); ok || len(st.Clients()) != 0 {
		t.Errorf("after the revokes: %+v", st.Clients())
	}
	if _, err := st.RevokeID(reg.ID); !errors.Is(err, access.ErrNoSuchID) {
		t.Errorf("revoking it again: %v", err)
	}
}
