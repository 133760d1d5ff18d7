package broker

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// TestCallerRootsFiltered: the roots a caller answers a child's roots/list
// with keep only the file roots whose canonical directory its rights reach
// (a symlink into a directory it may not use is dropped; a missing one, a
// relative one and a non-file URI too); the owner's pass as they are; other
// requests' answers are untouched.
func TestCallerRootsFiltered(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	allowed, other := filepath.Join(dir, "allowed"), filepath.Join(dir, "other")
	for _, d := range []string{allowed, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(allowed, "link")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	answer := `{"roots":[{"uri":"file://` + allowed + `","name":"mine"},{"uri":"file://` + link + `"},{"uri":"file://` + other + `"},` +
		`{"uri":"file://` + filepath.Join(dir, "gone") + `"},{"uri":"file:relative"},{"uri":"https://example.com/"}]}`
	client := func(ctx context.Context, req InputRequest) (json.RawMessage, error) {
		return json.RawMessage(answer), nil
	}
	guest := Caller{Name: "guest", Via: "tailnet", Rights: rights.Rights{{Servers: []string{"*"}, Roots: []string{allowed}}}}
	res, err := withCallerRoots(client, guest)(t.Context(), InputRequest{Method: jsonrpc.MethodRootsList})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"roots":[{"uri":"file://` + allowed + `","name":"mine"}]}`; string(res) != want {
		t.Errorf("a guest's roots: %s\nwant %s", res, want)
	}
	owner := Caller{Name: "me", Owner: true, Rights: rights.All()}
	if res, _ := withCallerRoots(client, owner)(t.Context(), InputRequest{Method: jsonrpc.MethodRootsList}); string(res) != answer {
		t.Errorf("the owner's roots were changed: %s", res)
	}
	if res, _ := withCallerRoots(client, guest)(t.Context(), InputRequest{Method: jsonrpc.MethodElicit}); !strings.Contains(string(res), other) {
		t.Errorf("an elicitation's answer was filtered: %s", res)
	}
}
