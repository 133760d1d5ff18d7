package rights

import (
	"fmt"
	"path/filepath"
	"slices"
)

// Reading rights from a grant, a token or a request, and checking one
// rule against a minter's rights. (CheckTools, beside the tool patterns,
// checks those.)

// CheckScopes returns an error naming the first scope a rule of r names
// that is neither one of kinds (the scope kinds the broker knows) nor "*".
func (r Rights) CheckScopes(kinds []string) error {
	for _, e := range r {
		for _, k := range e.Scopes {
			if k != "*" && !slices.Contains(kinds, k) {
				return fmt.Errorf("unknown scope %q", k)
			}
		}
	}
	return nil
}

// Canonical returns r with every root made comparable with the broker's
// canonical cwds (CanonicalRoot); a root that is not absolute or does not
// exist grants nothing and is dropped. A rule whose roots are all dropped
// allows no declared cwd: its Roots become empty, never nil.
func (r Rights) Canonical() Rights {
	if r == nil {
		return nil
	}
	out := make(Rights, len(r))
	for i, e := range r {
		if e.Roots != nil {
			roots := []string{}
			for _, root := range e.Roots {
				if c, ok := CanonicalRoot(root); ok {
					roots = appendNew(roots, c)
				}
			}
			e.Roots = roots
		}
		out[i] = e
	}
	return out
}

// CanonicalRoot makes a granted root comparable with the broker's canonical
// cwds: absolute, cleaned, symlinks resolved. ok is false for a root that
// is relative or does not exist (now).
func CanonicalRoot(root string) (canon string, ok bool) {
	if !filepath.IsAbs(root) {
		return "", false
	}
	canon, err := filepath.EvalSymlinks(filepath.Clean(root))
	return canon, err == nil
}

// Excess is the part of a rule that Rights do not cover (Covers): Field is
// the rule's member ("servers", "roots", "scopes", "tools", "rate",
// "metrics", "projectConfig") and Value the value that goes beyond
// ("(all)" for a list without limit that only a rule without that limit
// covers).
type Excess struct {
	Field string
	Value string
}

func (e *Excess) Error() string {
	return fmt.Sprintf("%s %s: beyond these rights", e.Field, e.Value)
}

// Covers returns nil if every use that q allows, one rule of r allows
// (and, if q says projectConfig, r's rules say it for each of q's roots),
// else an *Excess naming the first part of q that goes beyond: a token may
// grant no more than its minter has. q's roots must be canonical.
//
// Each server, root and scope of q is checked in every combination with
// the others; a list without limit stands for "*" (servers, scopes) or "/"
// (roots), which only a rule without that limit covers. q's metrics need
// metrics (or admin) in r.
//
// q's tools are checked at each such combination against the tool
// patterns of r's rules that allow it: covered when one of those rules has
// no tool limit, or each pattern of q that could match a tool of the
// server lies within one pattern of theirs: the same pattern, a tool name
// theirs matches, or a pattern whose literal start begins with y within
// their prefix glob "y*" (a pattern of q that is wider than the server,
// "*" or "git*" for github, counts as "github.*"). Anything else, and a q
// without tools when r's rules have them, is beyond: a minter with tool
// patterns names the tools of each token it mints.
func (r Rights) Covers(q Rule) error {
	servers := coverList(q.Servers, "*")
	roots := coverList(q.Roots, "/")
	scopes := coverList(q.Scopes, "*")
	for _, s := range servers {
		if !r.Allows(Use{Server: s}) {
			return &Excess{Field: "servers", Value: s}
		}
		for _, d := range roots {
			if !r.Allows(Use{Server: s, Dir: d}) {
				return &Excess{Field: "roots", Value: d}
			}
			for _, k := range scopes {
				u := Use{Server: s, Dir: d, Scope: k}
				if !r.Allows(u) {
					if q.Scopes == nil {
						k = "(all)"
					}
					return &Excess{Field: "scopes", Value: k}
				}
				if err := r.coversTools(u, q.Tools); err != nil {
					return err
				}
			}
		}
	}
	if err := r.coversLimit(q); err != nil {
		return err
	}
	if q.Code && !r.Code() {
		return &Excess{Field: "code", Value: "true"}
	}
	if q.Metrics && !r.Metrics() {
		return &Excess{Field: "metrics", Value: "true"}
	}
	if q.ProjectConfig {
		for _, d := range roots {
			if !r.ProjectConfig(d) {
				return &Excess{Field: "projectConfig", Value: "true"}
			}
		}
	}
	return nil
}

// coverList is the values Covers checks for one of q's lists: all for nil
// (no limit), nothing to check for an empty list ("" is no part of a Use).
func coverList(list []string, all string) []string {
	switch {
	case list == nil:
		return []string{all}
	case len(list) == 0:
		return []string{""}
	}
	return list
}
