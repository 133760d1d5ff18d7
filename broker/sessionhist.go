package broker

import (
	"os/user"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"mcpx.dev/mcpx/pool"
)

// A session's record beyond its creator (docs/scopes.md, "Sessions and
// leases"): the attach/detach history. A process attaches to a session by
// calling with its key — a local caller by its pid, a remote one (no pid)
// by its cwd — and detaches when:
//
//   - released: its lease was released (DELETE /v1/leases/{id});
//   - killed: the session was stopped by request (`mcpx sessions stop`);
//   - idle: the session's instances were reaped for idleness;
//   - pid-gone: its process exited (noticed when the session is next read
//     or attached to, or when its pid: instances are reaped);
//   - expired: its lease ran out, unrenewed.
//
// The history keeps the newest maxAttachments entries of each session;
// Dropped counts those let go before them.

// Attachment is one process's use of a session.
type Attachment struct {
	At    time.Time // its first call on the session
	Pid   int       // 0 = not known (a remote caller)
	Cwd   string    // its declared cwd
	Ended time.Time // zero while attached
	End   string    // how it ended: DetachReleased, DetachKilled, ...
}

// How an attachment ended.
const (
	DetachReleased = "released"
	DetachKilled   = "killed"
	DetachIdle     = "idle"
	DetachPidGone  = "pid-gone"
	DetachExpired  = "expired"
)

// maxAttachments bounds one session's history.
const maxAttachments = 32

// attach records that a process (pid, or cwd for pid 0) calls on the
// session of m, unless it is attached already; attachments of processes
// that are gone end as pid-gone first. now is the call's time.
func (m *sessionMeta) attach(pid int, cwd string, now time.Time) {
	for i := range m.history {
		a := &m.history[i]
		if !a.Ended.IsZero() {
			continue
		}
		if a.Pid == pid && (pid != 0 || a.Cwd == cwd) {
			return
		}
	}
	m.endGone(now)
	m.history = append(m.history, Attachment{At: now, Pid: pid, Cwd: cwd})
	if n := len(m.history) - maxAttachments; n > 0 {
		m.history = slices.Delete(m.history, 0, n)
		m.dropped += n
	}
}

// endGone ends the attachments whose process has exited.
func (m *sessionMeta) endGone(now time.Time) {
	for i := range m.history {
		if a := &m.history[i]; a.Ended.IsZero() && a.Pid > 0 && !keyAlive("pid:"+strconv.Itoa(a.Pid)) {
			a.Ended, a.End = now, DetachPidGone
		}
	}
}

// detach ends every open attachment of m as end.
func (m *sessionMeta) detach(end string, now time.Time) {
	for i := range m.history {
		if a := &m.history[i]; a.Ended.IsZero() {
			a.Ended, a.End = now, end
		}
	}
}

// attachKey records a call of pid (cwd) on key, if the registry knows it.
func (r *sessionRegistry) attachKey(key string, pid int, cwd string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.m[key]; m != nil {
		m.attach(pid, cwd, now)
	}
}

// detachKey ends key's open attachments as end.
func (r *sessionRegistry) detachKey(key, end string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.m[key]; m != nil {
		m.detach(end, now)
	}
}

// syncHistory reads the pool's reap events since the registry last did
// (syncReaps), and ends the attachments whose process has exited. Called
// before a session is shown.
func (b *Broker) syncHistory() {
	b.syncReaps()
	now := b.leases.now()
	r := &b.sessions
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.m {
		m.endGone(now)
	}
}

// syncReaps reads the pool's reap events since the registry last did,
// ending the attachments of the keys reaped (idle, or their owner gone).
// Called before a call attaches, so that a process whose session idled
// out attaches anew.
func (b *Broker) syncReaps() {
	r := &b.sessions
	r.mu.Lock()
	since := r.seen
	r.mu.Unlock()
	evs, _, _ := b.pool.Events().Since(since)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range evs {
		r.seen = max(r.seen, ev.ID)
		m := r.m[ev.Key]
		if ev.Kind != pool.EventReap || m == nil {
			continue
		}
		switch {
		case strings.HasPrefix(ev.Reason, "idle"):
			m.detach(DetachIdle, ev.Time)
		case isLeaseKey(ev.Key):
			m.detach(DetachExpired, ev.Time)
		default:
			m.detach(DetachPidGone, ev.Time)
		}
	}
}

// userNames caches local user names by uid.
var userNames sync.Map // int -> string

// userName is the login name of uid on this machine; "" if it has none.
func userName(uid int) string {
	if v, ok := userNames.Load(uid); ok {
		return v.(string)
	}
	name := ""
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		name = u.Username
	}
	userNames.Store(uid, name)
	return name
}
