package chain

import (
	"sync"
	"time"
)

// MaxCached bounds a Cache: past it, the oldest half of the entries go.
const MaxCached = 4096

// Cache keeps Find's answers per directory for a daemon that is asked for
// the same directories all day. An answer is trusted for Revalidate after it
// was found; then the next Get finds it again (two stats per level, and
// three per directory found). Reset, at a config reload, forgets all.
// Safe for concurrent use.
type Cache struct {
	opts       Options          // constant after NewCache
	revalidate time.Duration    // constant
	now        func() time.Time // constant

	mu sync.Mutex
	m  map[string]cached // guarded by mu; by directory
}

type cached struct {
	chain Chain
	warns []Warning
	found time.Time
}

// NewCache returns a cache of Find(dir, opts) answers, each trusted for
// revalidate (0 = found again on every Get). now nil = time.Now.
func NewCache(opts Options, revalidate time.Duration, now func() time.Time) *Cache {
	if now == nil {
		now = time.Now
	}
	return &Cache{opts: opts, revalidate: revalidate, now: now, m: map[string]cached{}}
}

// Options returns the options the cache finds chains with.
func (c *Cache) Options() Options { return c.opts }

// Get returns dir's chain, from the cache while it is fresh. The caller
// must not modify the returned slices.
func (c *Cache) Get(dir string) (Chain, []Warning) {
	now := c.now()
	c.mu.Lock()
	e, ok := c.m[dir]
	c.mu.Unlock()
	if ok && now.Sub(e.found) < c.revalidate {
		return e.chain, e.warns
	}
	ch, warns := Find(dir, c.opts)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= MaxCached {
		c.pruneLocked()
	}
	c.m[dir] = cached{chain: ch, warns: warns, found: now}
	return ch, warns
}

// pruneLocked drops the stale entries and the oldest one, so a full
// cache of fresh entries still makes room.
func (c *Cache) pruneLocked() {
	var oldest string
	var t time.Time
	for k, e := range c.m {
		if oldest == "" || e.found.Before(t) {
			oldest, t = k, e.found
		}
	}
	stale := c.now().Add(-c.revalidate)
	for k, e := range c.m {
		if e.found.Before(stale) {
			delete(c.m, k)
		}
	}
	delete(c.m, oldest)
}

// Reset forgets every answer.
func (c *Cache) Reset() {
	c.mu.Lock()
	clear(c.m)
	c.mu.Unlock()
}

// Len is the number of directories cached.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
