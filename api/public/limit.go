package public

import (
	"cmp"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limit is a rate limit per client address: Rate requests a second, in
// bursts of Burst.
type Limit struct {
	Rate  rate.Limit
	Burst int
}

// DefaultLimit is Options.Limit when it is zero: ample for a person's
// clients signing in, too little to guess a secret.
var DefaultLimit = Limit{Rate: 2, Burst: 20}

// maxAddrs bounds the addresses the limiter remembers: past it, the
// oldest half is forgotten.
const maxAddrs = 4096

// limiter limits requests per client address (the connection's, never a
// forwarded header's: behind a proxy every client shares the proxy's).
type limiter struct {
	limit Limit
	mu    sync.Mutex
	addrs map[string]*entry // guarded by mu
}

type entry struct {
	l    *rate.Limiter
	seen time.Time
}

func newLimiter(l Limit) *limiter {
	if l.Rate <= 0 {
		l.Rate = DefaultLimit.Rate
	}
	l.Burst = cmp.Or(l.Burst, DefaultLimit.Burst)
	return &limiter{limit: l, addrs: map[string]*entry{}}
}

func (lm *limiter) get(r *http.Request) *rate.Limiter {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	lm.mu.Lock()
	defer lm.mu.Unlock()
	e, ok := lm.addrs[host]
	if !ok {
		if len(lm.addrs) >= maxAddrs {
			lm.forgetLocked()
		}
		e = &entry{l: rate.NewLimiter(lm.limit.Rate, lm.limit.Burst)}
		lm.addrs[host] = e
	}
	e.seen = time.Now()
	return e.l
}

// forgetLocked drops the addresses not seen for longest.
func (lm *limiter) forgetLocked() {
	cut := time.Now().Add(-time.Minute)
	for a, e := range lm.addrs {
		if e.seen.Before(cut) || len(lm.addrs) > maxAddrs/2 {
			delete(lm.addrs, a)
		}
	}
}

// allow takes one request of r's address's allowance.
func (lm *limiter) allow(r *http.Request) bool { return lm.get(r).Allow() }

// spent reports whether r's address has used up its allowance, taking
// nothing of it.
func (lm *limiter) spent(r *http.Request) bool { return lm.get(r).Tokens() < 1 }
