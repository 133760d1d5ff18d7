package auth

import (
	"encoding/json"
	"path/filepath"
	"slices"

	"mcpx.dev/mcpx/auth/rights"
)

// stored is the copy of r a token carries: its own lists (nothing shared
// with the caller's), each root absolute and cleaned, each tool pattern
// valid (rights.CheckPattern), and never nil, so the token says "rights"
// even when it grants nothing.
func stored(r rights.Rights) (rights.Rights, error) {
	if err := r.CheckTools(); err != nil {
		return nil, grantError("%v", err)
	}
	if err := r.CheckLimits(); err != nil {
		return nil, grantError("%v", err)
	}
	if err := r.CheckMCPModes(); err != nil {
		return nil, grantError("%v", err)
	}
	out := make(rights.Rights, len(r))
	for i, e := range r {
		e.Servers, e.Scopes, e.Tools = slices.Clone(e.Servers), slices.Clone(e.Scopes), slices.Clone(e.Tools)
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
// UnmarshalJSON reads either form: the "rights" member, or else the flat
// rule as its grant wrote it (rights.Rule.Granted).

// UnmarshalJSON reads the claims of a token in either form (Claims).
func (c *Claims) UnmarshalJSON(b []byte) error {
	type plain Claims
	if err := json.Unmarshal(b, (*plain)(c)); err != nil {
		return err
	}
	return readRights(b, &c.Rights)
}

// UnmarshalJSON reads a ledger entry in either form (Info).
func (in *Info) UnmarshalJSON(b []byte) error {
	type plain Info
	if err := json.Unmarshal(b, (*plain)(in)); err != nil {
		return err
	}
	return readRights(b, &in.Rights)
}

// readRights sets *r to the rights of the token or ledger entry b: its
// "rights" if it has the member, else its flat rule.
func readRights(b []byte, r *rights.Rights) error {
	var v struct {
		Rights *rights.Rights `json:"rights"`
		rights.Rule
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v.Rights != nil {
		*r = *v.Rights
	} else {
		*r = rights.Rights{v.Rule.Granted()}
	}
	return nil
}
