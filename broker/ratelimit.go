package broker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/internal/defaults"
)

// Rate limits and quotas (docs/trust.md, "Rate limits"): every tool call
// and every request passed on to a child (resources/read, prompts/get,
// completion, …: Forwarded) is admitted here first, by
//
//   - the caller's rate: the tightest rate of its rules (rights.Rights.Limit:
//     a grant's or a token's "rate"), one token bucket per caller; the
//     owner's is the config's limits.ownerRate (none: unlimited);
//   - the server's "rate", one bucket for every caller and instance of it;
//   - the server's "maxConcurrent": calls beyond it wait for a slot, up to
//     pool.waitTimeout.
//
// A refusal is KindRateLimited naming the limit (Error.Limit) and when to
// retry (Error.RetryAfter), and is counted (Refusals). Listings and
// initialize are not limited: they are mostly answered from the schema
// cache, and a client that cannot list cannot work at all.

// LimitKind names the limit that refused a call.
type LimitKind string

const (
	LimitCallerRate        LimitKind = "caller-rate"        // the caller's rate (a grant's or token's, or limits.ownerRate)
	LimitServerRate        LimitKind = "server-rate"        // the server's rate, all callers together
	LimitServerConcurrency LimitKind = "server-concurrency" // the server's maxConcurrent
)

// LimitKinds are every LimitKind, in a fixed order.
func LimitKinds() []LimitKind {
	return []LimitKind{LimitCallerRate, LimitServerRate, LimitServerConcurrency}
}

// Limit is the limit that refused a call: its kind and its value as
// configured ("100/m", "100/m (burst 20)", "4").
type Limit struct {
	Kind  LimitKind
	Value string
}

// Refusal counts the calls one kind of limit refused for one server.
type Refusal struct {
	Kind   LimitKind
	Server string
	Count  int64
}

// maxCallerBuckets bounds the callers' buckets kept; past it, full ones
// (the same as a new one) are dropped.
const maxCallerBuckets = 4096

// limiters are the broker's rate limiters. The zero value is ready.
type limiters struct {
	mu      sync.Mutex
	callers map[string]*bucket         // guarded by mu; by callerID
	servers map[string]*serverLimiter  // guarded by mu; by pool server name
	refused map[Limit]map[string]int64 // guarded by mu; kind (Value unused) → server → count
}

// bucket is one token bucket and the limit it was made for.
type bucket struct {
	limit rights.Limit
	lim   *rate.Limiter
}

func newBucket(l rights.Limit) *bucket {
	return &bucket{limit: l, lim: rate.NewLimiter(rate.Limit(l.Rate.PerSecond()), l.BurstOrCount())}
}

// serverLimiter is one server's limits, as its definition last said.
type serverLimiter struct {
	limit rights.Limit  // the rate and burst it was made for
	rate  *bucket       // nil: no rate
	max   int           // 0: no maxConcurrent
	slots chan struct{} // cap max; a call holds one while it runs
}

// callerID names c's bucket: how it came, its name and, for a token, the
// token (two tokens of one subject have two buckets, each its own rate).
func callerID(c Caller) string {
	if c.Owner {
		return "owner"
	}
	return c.Via + "\x00" + c.Name + "\x00" + c.Token
}

// admit admits r's call to res, or refuses it (KindRateLimited). release,
// which the caller must call once the call is done, frees its
// maxConcurrent slot.
func (b *Broker) admit(ctx context.Context, r Request, res resolved) (release func(), err error) {
	l := &b.limits
	cl := r.Caller.Rights.Limit()
	if r.Caller.Owner {
		lc := b.currentConfig().Limits
		cl = rights.Limit{Rate: lc.OwnerRate, Burst: lc.OwnerBurst}
	}
	if cl.IsZero() && res.def.Rate.IsZero() && res.def.MaxConcurrent == 0 {
		return released, nil // no limit: no lock, nothing kept
	}
	sl := l.server(res.target.Server, res.def.Rate, res.def.Burst, res.def.MaxConcurrent)
	var reserved []*rate.Reservation
	unreserve := func() {
		for _, rv := range reserved {
			rv.Cancel()
		}
	}
	if !cl.IsZero() {
		rv := l.caller(callerID(r.Caller), cl).lim.Reserve()
		if d := rv.Delay(); d > 0 {
			rv.Cancel()
			return nil, b.refuse(r, Limit{LimitCallerRate, cl.String()}, d)
		}
		reserved = append(reserved, rv)
	}
	if sl.rate != nil {
		rv := sl.rate.lim.Reserve()
		if d := rv.Delay(); d > 0 {
			rv.Cancel()
			unreserve()
			return nil, b.refuse(r, Limit{LimitServerRate, sl.limit.String()}, d)
		}
		reserved = append(reserved, rv)
	}
	if sl.max == 0 {
		return released, nil
	}
	if err := b.waitSlot(ctx, r, sl); err != nil {
		unreserve()
		return nil, err
	}
	return func() { <-sl.slots }, nil
}

// released is the release of a call that holds no slot.
func released() {}

// waitSlot takes one of sl's slots, waiting up to pool.waitTimeout.
func (b *Broker) waitSlot(ctx context.Context, r Request, sl *serverLimiter) error {
	select {
	case sl.slots <- struct{}{}:
		return nil
	default:
	}
	wait := cmp.Or(b.currentConfig().Pool.WaitTimeout.D(), defaults.WaitTimeout)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case sl.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return b.translate(context.Cause(ctx), "wait for a call slot", r.Server)
	case <-t.C:
		return b.refuse(r, Limit{LimitServerConcurrency, fmt.Sprint(sl.max)}, time.Second)
	}
}

// refuse counts a refusal by lim and returns its error.
func (b *Broker) refuse(r Request, lim Limit, retry time.Duration) error {
	l := &b.limits
	l.mu.Lock()
	if l.refused == nil {
		l.refused = map[Limit]map[string]int64{}
	}
	k := Limit{Kind: lim.Kind}
	if l.refused[k] == nil {
		l.refused[k] = map[string]int64{}
	}
	l.refused[k][r.Server]++
	l.mu.Unlock()
	retry = max(retry, time.Second)
	e := &Error{Kind: KindRateLimited, Op: "admit call", Server: r.Server, Limit: &lim, RetryAfter: retry}
	wait := retry.Round(time.Second)
	switch lim.Kind {
	case LimitCallerRate:
		e.Msg = fmt.Sprintf("this caller is over its rate limit of %s; retry in %s", lim.Value, wait)
		e.Hint = "slow down, or ask for a grant or token with a higher rate"
		if r.Caller.Owner {
			e.Hint = "slow down, or raise limits.ownerRate in the config"
		}
	case LimitServerRate:
		e.Msg = fmt.Sprintf("the server's rate limit of %s (all callers together) is used up; retry in %s", lim.Value, wait)
		e.Hint = "slow down, or raise the server's rate in the config"
	default:
		e.Msg = fmt.Sprintf("the server's maxConcurrent of %s calls at once was reached and no call finished in time; retry in %s", lim.Value, wait)
		e.Hint = "retry, or raise the server's maxConcurrent (or pool.waitTimeout) in the config"
	}
	return e
}

// caller returns id's bucket for limit l, replacing one made for another
// limit (a grant or the config changed).
func (l *limiters) caller(id string, lim rights.Limit) *bucket {
	l.mu.Lock()
	defer l.mu.Unlock()
	if bk := l.callers[id]; bk != nil && bk.limit == lim {
		return bk
	}
	if l.callers == nil {
		l.callers = map[string]*bucket{}
	}
	if len(l.callers) >= maxCallerBuckets {
		now := time.Now()
		for k, bk := range l.callers {
			if bk.lim.TokensAt(now) >= float64(bk.limit.BurstOrCount()) {
				delete(l.callers, k)
			}
		}
	}
	bk := newBucket(lim)
	l.callers[id] = bk
	return bk
}

// server returns the limiter of the pool server name for its definition's
// limits, replacing one made for other limits (a reload changed them):
// calls running under the old one release their slots there.
func (l *limiters) server(name string, r rights.Rate, burst, maxConc int) *serverLimiter {
	lim := rights.Limit{Rate: r, Burst: burst}
	l.mu.Lock()
	defer l.mu.Unlock()
	sl := l.servers[name]
	if sl != nil && sl.limit == lim && sl.max == maxConc {
		return sl
	}
	sl = &serverLimiter{limit: lim, max: maxConc}
	if !lim.IsZero() {
		sl.rate = newBucket(lim)
	}
	if maxConc > 0 {
		sl.slots = make(chan struct{}, maxConc)
	}
	if l.servers == nil {
		l.servers = map[string]*serverLimiter{}
	}
	l.servers[name] = sl
	return sl
}

// Refusals are the calls the rate limits refused since the broker started,
// by kind and server, sorted.
func (b *Broker) Refusals() []Refusal {
	l := &b.limits
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Refusal
	for k, byServer := range l.refused {
		for s, n := range byServer {
			out = append(out, Refusal{Kind: k.Kind, Server: s, Count: n})
		}
	}
	slices.SortFunc(out, func(a, b Refusal) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Server, b.Server))
	})
	return out
}
