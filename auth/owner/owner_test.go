package owner_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"mcpx.dev/mcpx/auth/owner"
)

// TestOwnerTokens: a token added is checked by its secret alone, kept as
// a hash in a 0600 file, listed with its last use, replaced by a second
// add of its name, and refused at once once revoked, by another Tokens
// of the same directory (the daemon's, while the CLI edits).
func TestOwnerTokens(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "auth")
	cli, daemon := owner.Open(dir), owner.Open(dir)
	if _, err := daemon.Check(owner.Prefix + "x"); !errors.Is(err, owner.ErrUnknown) {
		t.Fatalf("before any token: %v", err)
	}
	secret, info, err := cli.Add("claude")
	if err != nil || info.Name != "claude" || !strings.HasPrefix(secret, owner.Prefix) || len(secret) < len(owner.Prefix)+43 {
		t.Fatalf("add: %q %+v %v", secret, info, err)
	}
	if got, err := daemon.Check(secret); err != nil || got.Name != "claude" || got.LastUsed.IsZero() {
		t.Fatalf("check: %+v %v", got, err)
	}
	for _, bad := range []string{"", secret[:len(secret)-1], secret + "x", strings.TrimPrefix(secret, owner.Prefix), strings.ToUpper(secret)} {
		if _, err := daemon.Check(bad); err == nil {
			t.Errorf("check %q admitted", bad)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, owner.TokensFile))
	if err != nil || strings.Contains(string(b), secret) || strings.Contains(string(b), strings.TrimPrefix(secret, owner.Prefix)) {
		t.Fatalf("the file holds the secret (or is missing: %v):\n%s", err, b)
	}
	for _, f := range []string{owner.TokensFile, owner.UsedFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want 0600", f, st, err)
		}
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v %v, want 0700", dir, st, err)
	}
	l, err := cli.List()
	if err != nil || len(l) != 1 || l[0].Name != "claude" || l[0].LastUsed.IsZero() || l[0].Created.IsZero() {
		t.Fatalf("list: %+v %v", l, err)
	}

	// A second add of the name replaces the token.
	again, _, err := cli.Add("claude")
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := cli.List(); len(l) != 1 || !l[0].LastUsed.IsZero() {
		t.Errorf("after replacing, list %+v: want one token, never used", l)
	}
	if _, err := daemon.Check(secret); !errors.Is(err, owner.ErrUnknown) {
		t.Errorf("the replaced secret: %v", err)
	}
	if _, err := daemon.Check(again); err != nil {
		t.Errorf("the new secret: %v", err)
	}

	// Renamed over another: the renamed one works under the new name, the
	// one it replaced does not.
	pending, _, _ := cli.Add("claude.pending")
	if err := cli.Rename("claude.pending", "claude"); err != nil {
		t.Fatal(err)
	}
	if got, err := daemon.Check(pending); err != nil || got.Name != "claude" {
		t.Errorf("the renamed token: %+v %v", got, err)
	}
	if _, err := daemon.Check(again); !errors.Is(err, owner.ErrUnknown) {
		t.Errorf("the token renamed over: %v", err)
	}
	if l, _ := cli.List(); len(l) != 1 {
		t.Errorf("after rename, list %+v", l)
	}
	again = pending

	// Revoked: refused at the next check.
	other, _, _ := cli.Add("scripts")
	if _, err := cli.Revoke("claude"); err != nil {
		t.Fatal(err)
	}
	if _, err := daemon.Check(again); !errors.Is(err, owner.ErrUnknown) {
		t.Errorf("a revoked secret: %v", err)
	}
	if _, err := daemon.Check(other); err != nil {
		t.Errorf("the other token after a revoke: %v", err)
	}
	if _, err := cli.Revoke("claude"); err == nil || !strings.Contains(err.Error(), "mcpx token ls") {
		t.Errorf("revoking twice: %v", err)
	}
	var used map[string]any
	b, _ = os.ReadFile(filepath.Join(dir, owner.UsedFile))
	if json.Unmarshal(b, &used) != nil || strings.Contains(string(b), "claude") {
		t.Errorf("the uses file: %s", b)
	}
}

// TestOwnerTokenNames: names are short words, never a signed token's id.
func TestOwnerTokenNames(t *testing.T) {
	t.Parallel()
	for name, ok := range map[string]bool{"claude": true, "ci.build-2_x": true, "": false, "-x": false, "a b": false,
		"0123456789abcdef0123456789abcdef": false, strings.Repeat("a", 65): false, "../x": false} {
		if err := owner.CheckName(name); (err == nil) != ok {
			t.Errorf("CheckName(%q): %v", name, err)
		}
	}
}

// TestOwnerTokensConcurrentAdds: commands adding at once lose nothing.
func TestOwnerTokensConcurrentAdds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if _, _, err := owner.Open(dir).Add("t" + string(rune('a'+i))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if l, err := owner.Open(dir).List(); err != nil || len(l) != 8 {
		t.Errorf("list after 8 adds: %d %v", len(l), err)
	}
}
