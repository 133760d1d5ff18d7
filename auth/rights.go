package auth

import (
	"encoding/json"
	"path/filepath"
	"slices"

	"mcpx.dev/mcpx/rights"
)

// stored is the copy of r a token carries: its own lists (nothing shared
// with the caller's), each root absolute and cleaned, and never nil, so
// the token says "rights" even when it grants nothing.
func stored(r rights.Rights) (rights.Rights, error) {
	out := make(rights.Rights, len(r))
	for i, e := range r {
		e.Servers, e.Scopes = slices.Clone(e.Servers), slices.Clone(e.Scopes)
		if e.Roots != nil {
			roots := make([]string, len(e.Roots))
			for j, root := range e.Roots {
				if !filepath.IsAbs(root) {
					return nil, grantError("root %q is not an absolute path on the broker's machine", root)
				}
				roots[j] = filepath.Clean(root)
			}
			e.Roots = roots
		}
		out[i] = e
	}
	return out, nil
}

// A token minted before tokens carried Rights has, in its claims and its
// ledger entry, one rule's members at the top level (servers, roots,
// scopes, admin, projectConfig), nothing granted by omission but scopes.
// UnmarshalJSON reads either form: the "rights" member (declared at the
// top, it hides the struct's own), or else the flat rule as its grant
// wrote it (rights.Rule.Granted).

// UnmarshalJSON reads the claims of a token in either form (Claims).
func (c *Claims) UnmarshalJSON(b []byte) error {
	type plain Claims
	var v struct {
		plain
		Rights *rights.Rights `json:"rights"`
		rights.Rule
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = Claims(v.plain)
	c.Rights = either(v.Rights, v.Rule)
	return nil
}

// UnmarshalJSON reads a ledger entry in either form (Info).
func (in *Info) UnmarshalJSON(b []byte) error {
	type plain Info
	var v struct {
		plain
		Rights *rights.Rights `json:"rights"`
		rights.Rule
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*in = Info(v.plain)
	in.Rights = either(v.Rights, v.Rule)
	return nil
}

// either is a token's rights: r if it had the member, else its flat rule.
func either(r *rights.Rights, flat rights.Rule) rights.Rights {
	if r != nil {
		return *r
	}
	return rights.Rights{flat.Granted()}
}
