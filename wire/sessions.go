package wire

import "time"

// LeaseRequest is the body of POST /v1/leases and of a renewal.
type LeaseRequest struct {
	// TTL is how long the lease lives past this request, as a Go duration
	// ("30s", "5m"); "" = 60s when acquiring, the lease's own ttl when
	// renewing. At most 1h; shorter than 1s is raised to 1s.
	TTL string `json:"ttl,omitempty"`
}

// Lease is an acquired or renewed lease. Send ID as Mcpx-Lease: instances
// of pid-scoped servers called with it stop when it is released or expires.
type Lease struct {
	ID      string    `json:"id"`
	Key     string    `json:"key"`     // the scope key of its instances: "lease:<id>", namespaced by caller for non-owners
	TTL     string    `json:"ttl"`     // each renewal's length, as a Go duration
	Expires time.Time `json:"expires"` // when it ends unless renewed
}

// QuerySession selects one session's records on GET /v1/log, its events on
// GET /v1/events and its calls on GET /v1/calls: the session's key
// (session:, psession:, lease: or pid:) or its name.
const QuerySession = "session"

// SessionCreator is who made a session: the caller of its first call.
type SessionCreator struct {
	Name  string `json:"name"`
	Via   string `json:"via"`            // a Via* value
	Owner bool   `json:"owner"`          // the daemon's own user
	Host  string `json:"host,omitempty"` // the machine it ran on, when known (the broker's for local callers)
	Cwd   string `json:"cwd,omitempty"`  // its declared cwd
	// Pid is its process (a local caller's only), User the login name of
	// a local caller's uid, ParentSession the Mcpx-Parent-Session it
	// declared, Client its User-Agent (mcpx/<version> from the mcpx CLI).
	Pid           int    `json:"pid,omitempty"`
	User          string `json:"user,omitempty"`
	ParentSession string `json:"parentSession,omitempty"`
	Client        string `json:"client,omitempty"`
}

// SessionAttachment is one process's use of a session: from its first
// call (At) until it detached (Ended, End), if it has.
type SessionAttachment struct {
	At    time.Time  `json:"at"`
	Pid   int        `json:"pid,omitempty"` // absent for a remote caller
	Cwd   string     `json:"cwd,omitempty"`
	Ended *time.Time `json:"ended,omitempty"`
	// End is how it ended: "released" (its lease released), "killed"
	// (the session stopped by request), "idle" (its instances reaped for
	// idleness), "pid-gone" (its process exited) or "expired" (its lease
	// ran out).
	End string `json:"end,omitempty"`
}

// Session is one caller-owned scope key (session:, psession:, lease: or
// pid:) and its running instances.
type Session struct {
	Key   string `json:"key"`
	Scope string `json:"scope"` // "session", "parent-session", "lease" or "pid"
	// Name, once set, makes the session outlive its creator's process or
	// lease: its instances stop only when idle.
	Name        string         `json:"name,omitempty"`
	IdleTimeout string         `json:"idleTimeout,omitempty"` // its own, as a Go duration; absent = each server's
	Creator     SessionCreator `json:"creator"`
	Created     time.Time      `json:"created"`
	LastUsed    time.Time      `json:"lastUsed"`
	Calls       int64          `json:"calls"`
	Instances   []Instance     `json:"instances"`
	// History is who attached and how each detached, oldest first: the
	// newest 32; Dropped counts the older ones let go.
	History []SessionAttachment `json:"history,omitempty"`
	Dropped int                 `json:"dropped,omitempty"`
}

// SessionList is the /v1/sessions document: the caller's own sessions, or
// everyone's for an admin.
type SessionList struct {
	Sessions []Session `json:"sessions"`
}

// SessionPatch is the body of PATCH /v1/sessions/{key}; absent members are
// left as they are.
type SessionPatch struct {
	// IdleTimeout is the session's own idle timeout, as a Go duration; "0"
	// returns to each server's.
	IdleTimeout *string `json:"idleTimeout,omitempty"`
	// Name labels the session and keeps it past its creator; "" clears it.
	Name *string `json:"name,omitempty"`
}
