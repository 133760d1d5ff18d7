package broker

import (
	"fmt"
	"slices"
	"strings"

	"mcpx.dev/mcpx/broker/config"
)

// MayUseScope reports whether c's rights allow a call that will use scope
// kind: Scopes nil (local callers, grants and tokens that name no scopes)
// allows every kind, "*" too; an empty non-nil Scopes allows none. It is
// the one scope check: whoever picks the scope a call will use (the
// server's, or a per-call override) asks it.
func (c Caller) MayUseScope(kind config.ScopeKind) bool {
	return c.Scopes == nil || slices.Contains(c.Scopes, kind) || slices.Contains(c.Scopes, "*")
}

// checkScope is MayUseScope as an error for server's call: a 403 naming the
// scope and the scopes c may use.
func (c Caller) checkScope(server string, kind config.ScopeKind) error {
	if c.MayUseScope(kind) {
		return nil
	}
	allowed := "none"
	if len(c.Scopes) > 0 {
		names := make([]string, len(c.Scopes))
		for i, s := range c.Scopes {
			names[i] = string(s)
		}
		allowed = strings.Join(names, ", ")
	}
	return &Error{Kind: KindForbidden, Op: "authorize", Server: server, Field: "scope",
		Msg:  fmt.Sprintf("this call would use scope %q; this caller may use scopes: %s", kind, allowed),
		Hint: "ask for a grant or token that names this scope, or call a server of an allowed scope"}
}

// ParseScopes checks scope names from a grant or token against the kinds
// the broker knows ("*" = all of them). nil stays nil (every kind).
func ParseScopes(names []string) ([]config.ScopeKind, error) {
	if names == nil {
		return nil, nil
	}
	out := make([]config.ScopeKind, 0, len(names))
	for _, n := range names {
		k := config.ScopeKind(n)
		if n != "*" && !slices.Contains(config.ScopeKinds(), k) {
			return nil, &Error{Kind: KindBadRequest, Op: "read rights", Field: "scopes",
				Msg:  fmt.Sprintf("unknown scope %q", n),
				Hint: fmt.Sprintf("scopes are %v, or \"*\" for all", config.ScopeKinds())}
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
