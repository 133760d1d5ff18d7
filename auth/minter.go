package auth

import (
	"reflect"
	"strings"

	"mcpx.dev/mcpx/auth/rights"
)

// Minter is who minted a token, as the ledger records it. A token dies
// with its minter's rights (see "Minters" in the package doc):
//
//   - Owner: the daemon's own user; its tokens answer to nobody.
//   - Token: the jti of the token its minter presented; the token is
//     valid only while that one is (recursively).
//   - otherwise (a tailnet caller): its rights as last seen (Issuer.Seen);
//     the token is valid only while they have admin and cover the token's.
//
// The zero Minter (a token minted before tokens recorded one) answers to
// nobody, as before.
type Minter struct {
	Name  string `json:"name"`            // the minter's caller name
	Via   string `json:"via"`             // how it came: "unix", "tcp-loopback", "tailnet", "jwt"
	Owner bool   `json:"owner,omitempty"` // the daemon's own user
	Token string `json:"token,omitempty"` // Via "jwt": the jti of the minter's token
	// Rights are the minter's rights when it minted (not stored: Seen
	// keeps the latest per minter).
	Rights rights.Rights `json:"-"`
}

// key names a minter whose rights the issuer follows ("" for one whose
// tokens answer to its own token or to nobody).
func (m Minter) key() string {
	if m.Owner || m.Via == "" || m.Token != "" {
		return ""
	}
	return m.Via + ":" + m.Name
}

// seen is what the issuer last saw of a minter it follows.
type seen struct {
	Rights rights.Rights `json:"rights"`
}

// reservedSubject says why a subject cannot be a token's: it names one of
// the broker's built-in callers (api: "loopback" for loopback TCP with the
// daemon's token, "loopback:<name>" for an owner token (package
// auth/owner), "local:<uid>" for the unix socket, "anonymous" for
// /healthz, "tailnet:unknown"), which a token's bearer must never look like
// in logs, listings and session keys.
func reservedSubject(sub string) (string, bool) {
	switch {
	case sub == "loopback", sub == "anonymous", sub == "tailnet:unknown":
		return sub + " is the name of one of the broker's built-in callers", true
	case strings.HasPrefix(sub, "local:"):
		return "local:… names the broker's unix-socket callers", true
	case strings.HasPrefix(sub, "loopback:"):
		return "loopback:… names the bearers of the owner's tokens on loopback TCP", true
	}
	return "", false
}

// Seen records the rights a minter the issuer follows has now (a tailnet
// caller, named by via and name, on each request it makes): its tokens are
// checked against them at each use, and one seen without admin revokes
// them for good. It writes the state file only when they changed; a caller
// that minted no token is not recorded.
func (is *Issuer) Seen(via, name string, r rights.Rights) error {
	k := Minter{Via: via, Name: name}.key()
	is.mu.RLock()
	prev, ok := is.st.Minters[k]
	is.mu.RUnlock()
	if !ok || reflect.DeepEqual(prev.Rights, r) {
		return nil
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	prev, ok = is.st.Minters[k]
	if !ok {
		return nil
	}
	is.st.Minters[k] = &seen{Rights: r}
	var revoked []*Info
	if !r.Admin() {
		for _, t := range is.st.Tokens {
			if t.Minter.key() == k && !t.Revoked {
				t.Revoked = true
				revoked = append(revoked, t)
			}
		}
	}
	if err := is.saveLocked(); err != nil {
		is.st.Minters[k] = prev
		for _, t := range revoked {
			t.Revoked = false
		}
		return err
	}
	return nil
}

// minterAllowsLocked reports whether t's minter still has the rights t
// carries (Minter), following minters' own tokens up the chain.
func (is *Issuer) minterAllowsLocked(t *Info, depth int) bool {
	m := t.Minter
	switch {
	case depth > len(is.st.Tokens):
		return false // a cycle cannot be minted; refuse rather than loop
	case m.Token != "":
		now := is.now()
		for _, p := range is.st.Tokens {
			if p.ID == m.Token {
				return !p.Revoked && now.Before(p.ExpiresAt) && is.minterAllowsLocked(p, depth+1)
			}
		}
		return false // expired and dropped from the ledger
	case m.key() == "":
		return true
	}
	last, ok := is.st.Minters[m.key()]
	if !ok || !last.Rights.Admin() {
		return false
	}
	for _, rule := range t.Rights.Canonical() {
		if last.Rights.Covers(rule) != nil {
			return false
		}
	}
	return true
}

// pruneMintersLocked forgets minters with no token left in the ledger.
func (is *Issuer) pruneMintersLocked() {
	for k := range is.st.Minters {
		used := false
		for _, t := range is.st.Tokens {
			if t.Minter.key() == k {
				used = true
				break
			}
		}
		if !used {
			delete(is.st.Minters, k)
		}
	}
}
