package main

import (
	"fmt"

	"mcpx.dev/mcpx/api/public"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/config"
)

// issuerOptions are the public face's external issuer of the config's
// public block (docs/public.md, "An external issuer"); nil = none, the
// embedded authorization server. A grant's roots are canonical here, as
// the rights of every other caller are.
func issuerOptions(p config.Public) (*public.IssuerOptions, error) {
	if p.Issuer == "" {
		return nil, nil
	}
	o := &public.IssuerOptions{URL: p.Issuer, Audience: p.Audience}
	for i, g := range p.Grants {
		rule := rights.Rule{Servers: g.Servers, Tools: g.Tools}
		for j, root := range g.Roots {
			canon, ok := rights.CanonicalRoot(root)
			if !ok {
				return nil, fmt.Errorf("public.grants[%d].roots[%d]: %q is not an existing directory (give one on the daemon's machine)", i, j, root)
			}
			rule.Roots = append(rule.Roots, canon)
		}
		o.Grants = append(o.Grants, public.ClaimGrant{Claim: g.Claim, Values: g.Values, Rule: rule})
	}
	return o, nil
}
