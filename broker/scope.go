package broker

// ScopeKind names how callers are grouped onto instances. See the table in
// DESIGN.md: the kind decides the key and the root.
type ScopeKind string

const (
	ScopeGlobal        ScopeKind = "global"
	ScopeRepo          ScopeKind = "repo"
	ScopeWorktree      ScopeKind = "worktree"
	ScopeCwd           ScopeKind = "cwd"
	ScopeSession       ScopeKind = "session"
	ScopeParentSession ScopeKind = "parent-session"
	ScopePid           ScopeKind = "pid"
	ScopeCall          ScopeKind = "call"
)

// CallContext is what a caller declares about itself, from the Mcpx-* headers.
type CallContext struct {
	Cwd           string // absolute path on the broker's machine; "" = not declared
	Session       string // Mcpx-Session
	ParentSession string // Mcpx-Parent-Session
	Lease         string // Mcpx-Lease: remote pid-style lifetime
	Pid           int    // Mcpx-Pid: only trusted from unix-socket callers; 0 = none
	CallID        string // unique per call; the broker assigns it
}

// ResolvedScope is where a call lands.
type ResolvedScope struct {
	Key      string // e.g. "worktree:/src/app-wt1"
	Root     string // "" for global/session/pid/call scopes
	Degraded string // why the requested scope could not be used; "" if it was
}
