package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"mcpx.dev/mcpx/internal/defaults"
)

// Health is a server's health check: its live idle children are sent an
// MCP ping every Interval; one that does not answer within Timeout is
// wedged, killed and replaced with no caller involved (docs/children.md).
// A server without one takes pool.health; neither = no check (a child is
// still probed when one of its calls times out).
type Health struct {
	// Interval is how often an idle child is pinged; "off" turns a
	// pool-wide check off for this server. At least MinHealthInterval.
	Interval Period `json:"interval"`
	// Timeout is how long a ping may go unanswered; 0 = the smaller of
	// defaults.HealthTimeout and half the interval. At most half the
	// interval, so that a wedged child is replaced within two intervals.
	Timeout Duration `json:"timeout,omitempty"`
	// URL, on a url server only, is fetched (GET, with none of the
	// server's headers or sign-in) at each check after the ping; an answer
	// other than Expect, or none within Timeout, fails the check as an
	// unanswered ping does.
	URL string `json:"url,omitempty"`
	// Expect is the status URL must answer; 0 = 200.
	Expect int `json:"expect,omitempty"`
}

// healthFields are the keys of a health object.
var healthFields = []string{"interval", "timeout", "url", "expect"}

// UnmarshalJSON reads {"interval": ..., "timeout": ...} and refuses other
// fields: a misspelt "timout" must not leave the default in force unseen.
func (h *Health) UnmarshalJSON(b []byte) error {
	type plain Health
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf(`want an object such as {"interval": "30s", "timeout": "5s"}, got %s`, clip(string(b), 20))
	}
	for k := range m {
		if !slices.Contains(healthFields, k) {
			return fmt.Errorf("unknown field %q in health; %s", k, hintFor(k, healthFields, "fields"))
		}
	}
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*h = Health(v)
	return nil
}

// On reports whether h checks anything.
func (h *Health) On() bool { return h != nil && h.Interval > 0 }

// MinHealthInterval is the shortest health interval: each check is a
// message to every idle child of the server.
const MinHealthInterval = time.Second

// IdleTimeouts is pool.idleTimeout: one duration ("10m"), or one per scope
// with a default ({"call": "30s", "session": "30m", "default": "10m"}). A
// server's own idleTimeout wins over its scope's, a named session's own
// idle timeout over both.
type IdleTimeouts struct {
	Default Duration               // the scopes not named; 0 = defaults.IdleTimeout
	Scopes  map[ScopeKind]Duration // by scope; nil for the plain form
}

// D is the default idle timeout.
func (t IdleTimeouts) D() time.Duration { return t.Default.D() }

// For is the idle timeout of a server of scope kind that sets none.
func (t IdleTimeouts) For(kind ScopeKind) time.Duration {
	return cmp.Or(t.Scopes[kind], t.Default).D()
}

// MarshalJSON writes the plain form when no scope is named.
func (t IdleTimeouts) MarshalJSON() ([]byte, error) {
	if len(t.Scopes) == 0 {
		return json.Marshal(t.Default)
	}
	m := map[string]Duration{"default": t.Default}
	for k, d := range t.Scopes {
		m[string(k)] = d
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads a duration string, or an object of scope names (and
// "default") to duration strings.
func (t *IdleTimeouts) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return t.Default.UnmarshalJSON(b)
	}
	var m map[string]Duration
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf(`want a duration such as "10m", or durations by scope such as {"call": "30s", "session": "30m", "default": "10m"}: %v`, err)
	}
	known := append(ScopeNames(), "default")
	next := IdleTimeouts{Scopes: map[ScopeKind]Duration{}}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch {
		case k == "default":
			next.Default = m[k]
		case IsScopeKind(ScopeKind(k)):
			next.Scopes[ScopeKind(k)] = m[k]
		default:
			return fmt.Errorf("unknown scope %q in idleTimeout; %s", k, hintFor(k, known, "keys"))
		}
	}
	*t = next
	return nil
}

// checkPoolLife checks the pool's health default and per-scope idle
// timeouts, and fills the default.
func (p *problems) checkPoolLife(pc *Pool) {
	for _, k := range slices.Sorted(maps.Keys(pc.IdleTimeout.Scopes)) {
		if d := pc.IdleTimeout.Scopes[k]; d <= 0 {
			p.add("", "pool.idleTimeout."+string(k), fmt.Sprintf("idle timeout %s", d), "use a positive duration such as \"30s\", or leave the scope out for the default")
		}
	}
	if pc.Health != nil {
		p.checkHealth("", "pool.health", pc.Health)
		if pc.Health.URL != "" || pc.Health.Expect != 0 {
			p.add("", "pool.health.url", "a health URL is one server's", `move "url" (and "expect") to the url server's own "health"`)
		}
	}
}

// checkLife checks a server's health, min and warm, taking pool.health
// when it sets no health of its own. Its scope is filled already.
func (p *problems) checkLife(name string, s *Server, pc *Pool) {
	if s.Health == nil && pc.Health.On() {
		h := *pc.Health
		s.Health = &h
	} else if s.Health != nil {
		if s.Health.Interval == 0 && s.Health.URL != "" && pc.Health.On() {
			// {"url": ...} alone: checked at pool.health's pace.
			s.Health.Interval = pc.Health.Interval
			s.Health.Timeout = cmp.Or(s.Health.Timeout, pc.Health.Timeout)
		}
		p.checkHealth(name, "health", s.Health)
		p.checkHealthURL(name, s)
	}
	switch {
	case s.Min < 0:
		p.add(name, "min", fmt.Sprintf("min is %d", s.Min), "use 0 (no instance kept warm) or a positive number")
	case s.Min > 0 && s.Scope == ScopeCall:
		p.add(name, "min", "min is set on a call-scoped server, whose instances end with their call", `drop "min", or use a scope whose instances outlive a call such as "global"`)
	case s.Min > s.Max && s.Max > 0:
		p.add(name, "min", fmt.Sprintf("min %d is over max %d", s.Min, s.Max), fmt.Sprintf("lower min, or raise max to %d", s.Min))
	}
	if s.Warm && s.Scope != ScopeGlobal && s.Min == 0 {
		p.warn(name, "warm", fmt.Sprintf("warm on a %s-scoped server warms only the keys already used, so nothing at the daemon's start", s.Scope),
			`use scope "global" to warm at start, or drop "warm"`)
	}
}

// checkHealthURL checks a server's health.url and health.expect: an
// absolute http(s) URL, on a url server, and a status code.
func (p *problems) checkHealthURL(name string, s *Server) {
	h := s.Health
	if h.Expect != 0 && (h.Expect < 100 || h.Expect > 599) {
		p.add(name, "health.expect", fmt.Sprintf("expect %d is no HTTP status", h.Expect), "use a status such as 200 or 204, or leave it out for 200")
	}
	if h.URL == "" {
		if h.Expect != 0 {
			p.add(name, "health.expect", "expect is set with no health.url", `add "url": the address to fetch, such as "https://host/healthz"`)
		}
		return
	}
	if s.URL == "" {
		p.add(name, "health.url", "a health URL is for url servers: a stdio child is checked by its ping alone", `drop "url" from "health"`)
		return
	}
	if u, err := url.Parse(h.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.add(name, "health.url", fmt.Sprintf("health URL %q is not an absolute http(s) URL", h.URL), `such as "https://mcp.example.com/healthz"`)
	}
}

func (p *problems) checkHealth(name, field string, h *Health) {
	if h.Interval == 0 {
		p.add(name, field+".interval", "a health check needs an interval", `such as {"interval": "30s", "timeout": "5s"}, or "off"`)
		return
	}
	if h.Interval < 0 {
		return // off
	}
	if h.Interval.D() < MinHealthInterval {
		p.add(name, field+".interval", fmt.Sprintf("interval %s is under the minimum of %s", h.Interval, MinHealthInterval), `use "30s" or so`)
		return
	}
	if h.Timeout < 0 {
		p.add(name, field+".timeout", fmt.Sprintf("negative timeout %s", h.Timeout), "use a positive duration below the interval, or leave it out")
		return
	}
	if h.Timeout == 0 {
		h.Timeout = Duration(min(defaults.HealthTimeout, h.Interval.D()/2))
	}
	if h.Timeout.D() > h.Interval.D()/2 {
		p.add(name, field+".timeout", fmt.Sprintf("timeout %s is over half the interval %s", h.Timeout, h.Interval),
			"a wedged child is replaced within two intervals only if its ping fails within half of one: lower the timeout or raise the interval")
	}
}

// renamedField reports m if it is a per-server key the original system
// used that this one renamed, as an error with the migration: "mode" was
// both how callers share an instance and which callers share one, now
// "sharing" and "scope".
func (p *problems) renamedField(name string, m member) bool {
	if m.key != "mode" {
		return false
	}
	var v string
	json.Unmarshal(m.value, &v) //nolint:errcheck // any value gets the hint; a string a more exact one
	hint := `use "sharing" ("shared" or "exclusive": how callers share an instance) and "scope" (which callers share one: ` +
		strings.Join(ScopeNames(), ", ") + `)`
	switch {
	case v == string(SharingShared) || v == string(SharingExclusive):
		hint = fmt.Sprintf(`write "sharing": %q; "scope" says which callers share an instance`, v)
	case IsScopeKind(ScopeKind(v)):
		hint = fmt.Sprintf(`write "scope": %q; "sharing" says whether callers share it at once ("shared") or one at a time ("exclusive")`, v)
	}
	p.add(name, "mode", `"mode" was renamed: it is "sharing" and "scope" now`, hint)
	return true
}
