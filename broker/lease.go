package broker

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Lease bounds: a lease lives for its ttl past its last renewal.
const (
	DefaultLeaseTTL = 60 * time.Second // a POST /v1/leases without ttl
	MinLeaseTTL     = time.Second      // shorter ttls are raised to this
	MaxLeaseTTL     = time.Hour        // longer ttls are refused: renew instead
	// maxLeasesPerCaller bounds what one caller can make the broker hold.
	maxLeasesPerCaller = 1024
)

// Lease is a remote caller's pid-style lifetime: instances of pid-scoped
// servers called with it (Mcpx-Lease) are keyed lease:<id> and stop when it
// is released or expires.
type Lease struct {
	ID      string        // what the caller sends as Mcpx-Lease
	Key     string        // the scope key of its instances: lease:<id>, namespaced for non-owners
	TTL     time.Duration // how long each renewal keeps it
	Expires time.Time     // when it ends unless renewed
	Holder  string        // the caller that acquired it
}

// leases is the broker's lease registry. Safe for concurrent use.
type leases struct {
	now func() time.Time

	mu sync.Mutex
	m  map[string]*Lease // guarded by mu; by scope key
}

// newLeases returns an empty registry reading the clock now (nil = time.Now).
func newLeases(now func() time.Time) *leases {
	if now == nil {
		now = time.Now
	}
	return &leases{now: now, m: map[string]*Lease{}}
}

// leaseKey is the scope key a caller's lease id maps to, as target
// computes it for a call naming that lease.
func leaseKey(id string, c Caller) string {
	return callerKey("lease:"+id, c)
}

// acquire makes a lease for c with ttl (0 = DefaultLeaseTTL).
func (l *leases) acquire(c Caller, ttl time.Duration) (Lease, error) {
	ttl, err := leaseTTL(ttl)
	if err != nil {
		return Lease{}, err
	}
	var b [16]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for k, le := range l.m {
		switch {
		case !now.Before(le.Expires):
			delete(l.m, k) // swept here; the pool has stopped or will stop its instances
		case le.Holder == c.Name:
			n++
		}
	}
	if n >= maxLeasesPerCaller {
		return Lease{}, &Error{Kind: KindExhausted, Op: "acquire lease", RetryAfter: time.Second,
			Msg:  fmt.Sprintf("this caller holds %d leases, the most it may", n),
			Hint: "release leases you no longer need (DELETE /v1/leases/{id})"}
	}
	le := &Lease{ID: id, Key: leaseKey(id, c), TTL: ttl, Expires: now.Add(ttl), Holder: c.Name}
	l.m[le.Key] = le
	return *le, nil
}

func leaseTTL(ttl time.Duration) (time.Duration, error) {
	switch {
	case ttl == 0:
		return DefaultLeaseTTL, nil
	case ttl < 0 || ttl > MaxLeaseTTL:
		return 0, &Error{Kind: KindBadRequest, Op: "acquire lease", Field: "ttl",
			Msg:  fmt.Sprintf("ttl %s is outside (0, %s]", ttl, MaxLeaseTTL),
			Hint: fmt.Sprintf("ask for at most %s and renew the lease before it ends", MaxLeaseTTL)}
	}
	return max(ttl, MinLeaseTTL), nil
}

// find returns c's live lease id: its own (namespaced) first, then, for an
// admin, a lease of any caller named by its full id ("bob/abc…" for a
// remote caller's lease). Expired leases are not found.
func (l *leases) findLocked(id string, c Caller) *Lease {
	now := l.now()
	keys := []string{leaseKey(id, c)}
	if c.Rights.Admin() {
		keys = append(keys, "lease:"+id)
	}
	for _, k := range keys {
		if le := l.m[k]; le != nil && now.Before(le.Expires) {
			return le
		}
	}
	return nil
}

func leaseNotFound(op, id string) *Error {
	return &Error{Kind: KindNotFound, Op: op, Field: "lease",
		Msg:  fmt.Sprintf("no lease %q: it expired, was released, or was never acquired by this caller", id),
		Hint: "acquire a new one (POST /v1/leases, or `mcpx lease run`)"}
}

// renew extends c's lease id by ttl (0 = the lease's own ttl).
func (l *leases) renew(id string, c Caller, ttl time.Duration) (Lease, error) {
	if ttl != 0 {
		var err error
		if ttl, err = leaseTTL(ttl); err != nil {
			return Lease{}, err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	le := l.findLocked(id, c)
	if le == nil {
		return Lease{}, leaseNotFound("renew lease", id)
	}
	if ttl != 0 {
		le.TTL = ttl
	}
	le.Expires = l.now().Add(le.TTL)
	return *le, nil
}

// release ends c's lease id and returns its scope key.
func (l *leases) release(id string, c Caller) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	le := l.findLocked(id, c)
	if le == nil {
		return "", leaseNotFound("release lease", id)
	}
	delete(l.m, le.Key)
	return le.Key, nil
}

// alive reports whether the lease behind a lease: scope key is live.
func (l *leases) alive(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	le := l.m[key]
	return le != nil && l.now().Before(le.Expires)
}

// checkDeclared refuses a call naming a lease c does not hold: a stale
// Mcpx-Lease must not silently become another lifetime.
func (l *leases) checkDeclared(id string, c Caller) error {
	if id == "" || l.alive(leaseKey(id, c)) {
		return nil
	}
	return &Error{Kind: KindBadRequest, Op: "resolve scope", Field: "Mcpx-Lease",
		Msg:  fmt.Sprintf("Mcpx-Lease %q names no live lease of this caller: it expired, was released, or was never acquired", id),
		Hint: "acquire one with POST /v1/leases (or run the command under `mcpx lease run`), renew it before it ends, or drop the header"}
}

// isLeaseKey reports whether key is a lease: key.
func isLeaseKey(key string) bool { return strings.HasPrefix(key, "lease:") }
