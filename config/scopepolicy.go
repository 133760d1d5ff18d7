package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// CallerKind says where a caller's scope override (Mcpx-Scope) came from,
// as the caller declares it (Mcpx-Scope-From): the mcpx CLI's --scope
// ("flag") or its $MCPX_SCOPE ("env"), a script ("script": what the run's
// relay forwards, and the generated client's scope option or
// $MCPX_SCOPE), or a request that declares none ("api").
type CallerKind string

// The caller kinds.
const (
	CallerFlag   CallerKind = "flag"
	CallerEnv    CallerKind = "env"
	CallerScript CallerKind = "script"
	CallerAPI    CallerKind = "api"
)

// CallerKinds lists the caller kinds, for messages.
func CallerKinds() []string { return []string{"flag", "env", "script", "api"} }

// IsCallerKind reports whether k names a caller kind.
func IsCallerKind(k CallerKind) bool { return slices.Contains(CallerKinds(), string(k)) }

// ScopePolicy is a server's scope policy: whether a caller may override the
// configured scope at call time (the Mcpx-Scope header), and with which
// scopes. The defaults — Allow every scope, AllowOverride false — keep the
// configured scope the only one in force: the scope decides who shares a
// child and its state (a call-scoped server is isolated per call, a global
// one shared by all), so only the config's owner may open it to callers,
// and listing the scopes is needed only once overriding is on.
//
// pool.scopePolicy, in the daemon's own config, bounds every server's: an
// override must be allowed by both, so a project file's server cannot open
// more than the owner allowed.
type ScopePolicy struct {
	// Allow lists the scopes a caller may ask for; nil = every scope.
	// When set, it must include the configured scope.
	Allow []ScopeKind `json:"allow,omitempty"`
	// AllowOverride lets a caller's Mcpx-Scope replace the configured
	// scope, when the scope it names is in Allow. false = a call naming a
	// scope other than the configured one is refused.
	AllowOverride bool `json:"allowOverride,omitempty"` // written as OverrideBy when that is set (MarshalJSON)
	// OverrideBy, when set, are the only caller kinds whose override is
	// taken ("allowOverride": ["flag", "script"]); nil with AllowOverride
	// = every kind.
	OverrideBy []CallerKind `json:"-"`
}

// Allows reports whether the policy lets a caller ask for kind: the
// configured scope always, any other when AllowOverride is on and Allow
// names it (or is nil).
func (sp ScopePolicy) Allows(configured, kind ScopeKind) bool {
	if kind == configured {
		return true
	}
	return sp.AllowOverride && (sp.Allow == nil || slices.Contains(sp.Allow, kind))
}

// AllowsFrom reports whether the policy takes an override from a caller
// of kind from.
func (sp ScopePolicy) AllowsFrom(from CallerKind) bool {
	return sp.AllowOverride && (sp.OverrideBy == nil || slices.Contains(sp.OverrideBy, from))
}

// OverrideText is allowOverride as written: true, false or the kinds.
func (sp ScopePolicy) OverrideText() string {
	if !sp.AllowOverride || sp.OverrideBy == nil {
		return fmt.Sprint(sp.AllowOverride)
	}
	s := make([]string, len(sp.OverrideBy))
	for i, k := range sp.OverrideBy {
		s[i] = string(k)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

type scopePolicyJSON struct {
	Allow         []ScopeKind     `json:"allow,omitempty"`
	AllowOverride json.RawMessage `json:"allowOverride,omitempty"`
}

// MarshalJSON writes allowOverride as true/false, or the list of kinds.
func (sp ScopePolicy) MarshalJSON() ([]byte, error) {
	v := scopePolicyJSON{Allow: sp.Allow}
	switch {
	case sp.AllowOverride && sp.OverrideBy != nil:
		v.AllowOverride, _ = json.Marshal(sp.OverrideBy)
	case sp.AllowOverride:
		v.AllowOverride = json.RawMessage("true")
	}
	return json.Marshal(v)
}

const scopePolicyWant = `want {"allow": [scope names], "allowOverride": true, false or caller kinds such as ["flag", "script"]}`

// UnmarshalJSON reads {"allow": [...], "allowOverride": bool or [kinds]}
// and refuses other fields: a misspelt "allowOverrides" must not silently
// leave overriding off.
func (sp *ScopePolicy) UnmarshalJSON(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var v scopePolicyJSON
	if err := d.Decode(&v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf(`%s, got %s for %s`, scopePolicyWant, te.Value, cmp.Or(te.Field, "the policy"))
		}
		return fmt.Errorf(`%s: %v`, scopePolicyWant, err)
	}
	next := ScopePolicy{Allow: v.Allow}
	raw := bytes.TrimSpace(v.AllowOverride)
	switch {
	case len(raw) == 0, string(raw) == "false", string(raw) == "null":
	case string(raw) == "true":
		next.AllowOverride = true
	default:
		var kinds []CallerKind
		if err := json.Unmarshal(raw, &kinds); err != nil {
			return fmt.Errorf("%s, got %s for allowOverride", scopePolicyWant, clip(string(raw), 20))
		}
		for _, k := range kinds {
			if !IsCallerKind(k) {
				return fmt.Errorf("unknown caller kind %q in allowOverride; %s", k, hintFor(string(k), CallerKinds(), "kinds"))
			}
		}
		next.AllowOverride, next.OverrideBy = len(kinds) > 0, kinds
	}
	*sp = next
	return nil
}
