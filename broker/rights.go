package broker

import (
	"encoding/json"
	"errors"
	"fmt"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/config"
)

// authorize is the one authorization of a use of a server: nil when one
// rule of c's rights allows u whole (package rights). A server c may not
// use at all is, to c, a server that does not exist: the same KindNotFound
// among servers as for a name that is not configured, so no caller can
// probe which names exist. A cwd or scope no rule allows together with
// the server is KindForbidden: the caller may use the server, not there or
// not so; the refusal names what its rules for that server allow.
//
// servers are those c is served (at its cwd) that u's server is among.
func authorize(servers map[string]*config.Server, c Caller, u rights.Use) error {
	err := c.Rights.Check(u)
	if err == nil {
		return nil // before errors.As, whose target would escape on every call
	}
	var d *rights.Denial
	if !errors.As(err, &d) {
		return err
	}
	switch d.Part {
	case rights.PartServer:
		// To the caller, a server that does not exist; to the owner's
		// metrics and log (IsRefusal, the op), a refusal. The problem the
		// caller gets carries neither.
		nf := notFoundAmong(servers, u.Server, c).(*Error)
		nf.Op = opAuthorize
		return nf
	case rights.PartTool:
		// As a tool the child does not list (CallTool).
		return &Error{Kind: KindNotFound, Op: opAuthorize, Server: u.Server, Msg: fmt.Sprintf("no tool %q", u.Tool)}
	case rights.PartDir:
		return &Error{Kind: KindForbidden, Op: opAuthorize, Server: u.Server, Field: "Mcpx-Cwd", Msg: d.Msg, Hint: d.Hint}
	}
	return &Error{Kind: KindForbidden, Op: opAuthorize, Server: u.Server, Field: "scope", Msg: d.Msg, Hint: d.Hint}
}

const opAuthorize = "authorize"

// IsRefusal reports whether err is the caller's rights refusing a request:
// a KindForbidden, or the KindNotFound authorize answers for a server the
// caller may not use (which its problem does not tell from a missing one).
func IsRefusal(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.Kind == KindForbidden || e.Kind == KindNotFound && e.Op == opAuthorize)
}

// visibleTools is list (a JSON array of MCP Tool objects) with only the
// tools set holds: list itself when set holds every tool, else a new array
// (list is the session's cache: never modified). An element that is not a
// Tool with a name is left out: no pattern can allow it.
func visibleTools(list json.RawMessage, set rights.ToolSet) json.RawMessage {
	if set.All() {
		return list
	}
	var tools []json.RawMessage
	if set.Any() {
		json.Unmarshal(list, &tools) //nolint:errcheck // not an array: no tool is shown
	}
	out := make([]json.RawMessage, 0, len(tools))
	for _, t := range tools {
		var named struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(t, &named) == nil && named.Name != "" && set.Allows(named.Name) {
			out = append(out, t)
		}
	}
	b, _ := json.Marshal(out) // each element was decoded as JSON: it marshals
	return b
}

// CheckRights checks rights read from a grant or a token: every scope a
// rule names must be one the broker knows, or "*", and every tool pattern
// must be one (rights.CheckPattern). KindBadRequest naming the first that
// is not.
func CheckRights(r rights.Rights) error {
	if err := r.CheckTools(); err != nil {
		return &Error{Kind: KindBadRequest, Op: "read rights", Field: "tools", Msg: err.Error(),
			Hint: `tools are globs over server.tool in which * is the only wildcard, e.g. "github.get_*"`}
	}
	if err := r.CheckLimits(); err != nil {
		return &Error{Kind: KindBadRequest, Op: "read rights", Field: "burst", Msg: err.Error()}
	}
	if err := r.CheckMCPModes(); err != nil {
		return &Error{Kind: KindBadRequest, Op: "read rights", Field: "mcpMode", Msg: err.Error()}
	}
	kinds := make([]string, 0, len(config.ScopeKinds()))
	for _, k := range config.ScopeKinds() {
		kinds = append(kinds, string(k))
	}
	if err := r.CheckScopes(kinds); err != nil {
		return &Error{Kind: KindBadRequest, Op: "read rights", Field: "scopes", Msg: err.Error(),
			Hint: fmt.Sprintf("scopes are %v, or \"*\" for all", config.ScopeKinds())}
	}
	return nil
}
