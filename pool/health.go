package pool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"mcpx.dev/mcpx/mcp/client"
)

// Keeping children alive and warm, with no caller involved (docs/children.md,
// "Health, min and warm"):
//
//   - the health check: a live idle child of a server with a
//     HealthInterval is sent an MCP ping once per interval of no use; one
//     that does not answer within HealthTimeout is wedged — killed as a
//     child whose call timed out is (probeOnce), with the same wedged
//     event — and a new child is started in its place at once;
//   - min: Server.Min instances are kept running for the keys known (the
//     server's Keys, then the last keys used), started again when they die
//     (after the crash backoff, when it is in force), and never reaped for
//     idleness;
//   - warm: at SetServers, each known key of a Warm server with no
//     instance and no tools in the schema cache gets a child that lists
//     its tools, then idles out as any other.
//
// One goroutine (healthLoop) does the first two on a tick of a quarter of
// the shortest interval (at most healthTickMax); what it decides is done
// under Pool.mu, the pings themselves in the background.

const (
	healthTickMin = 20 * time.Millisecond
	healthTickMax = time.Second
)

// lifeless is def without the fields that keep its children alive: a
// change of those alone replaces no instance.
func lifeless(def *Server) Server {
	d := *def
	d.HealthInterval, d.HealthTimeout, d.HealthURL, d.HealthExpect, d.Min, d.Warm, d.Keys = 0, 0, "", 0, 0, false, nil
	return d
}

// sameLife reports whether a and b are the same definition but for their
// health, min and warm, which a running instance does not depend on.
func sameLife(a, b *Server) bool {
	la, lb := lifeless(a), lifeless(b)
	return sameDef(&la, &lb)
}

// keeper remembers the last keys used of the servers with a Min or Warm.
type keeper struct {
	mu      sync.Mutex
	keep    map[string]int      // guarded by mu; how many keys to remember, by server
	recent  map[string][]Target // guarded by mu; by server, newest first
	warming map[instKey]bool    // guarded by mu; warm starts under way
}

// set takes the servers' Min and Warm from defs.
func (k *keeper) set(defs map[string]*Server) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keep = map[string]int{}
	for name, d := range defs {
		if n := max(d.Min, btoi(d.Warm)); n > 0 {
			k.keep[name] = n
		}
	}
	for name, r := range k.recent {
		if n := k.keep[name]; len(r) > n {
			k.recent[name] = r[:n]
		}
	}
}

// used notes that a caller used t.
func (k *keeper) used(t Target) {
	if t.Ephemeral {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	n := k.keep[t.Server]
	if n == 0 || (len(k.recent[t.Server]) > 0 && k.recent[t.Server][0].Key == t.Key) {
		return
	}
	r := []Target{t}
	for _, x := range k.recent[t.Server] {
		if x.Key != t.Key && len(r) < n {
			r = append(r, x)
		}
	}
	if k.recent == nil {
		k.recent = map[string][]Target{}
	}
	k.recent[t.Server] = r
}

// forget drops key from the last keys used: an instance stopped by
// request is not started again by Min (a server's Keys still are).
func (k *keeper) forget(key instKey) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.recent[key.server] == nil {
		return
	}
	k.recent[key.server] = slices.DeleteFunc(k.recent[key.server], func(t Target) bool { return t.Key == key.key })
}

func (k *keeper) last(server string) []Target {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.recent[server])
}

// startWarm reports whether a warm start of key may begin (none is under way).
func (k *keeper) startWarm(key instKey, begin bool) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !begin {
		delete(k.warming, key)
		return false
	}
	if k.warming[key] {
		return false
	}
	if k.warming == nil {
		k.warming = map[instKey]bool{}
	}
	k.warming[key] = true
	return true
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// knownLocked are def's known targets: its Keys, then its last keys used,
// the first n of them.
func (p *Pool) knownLocked(def *Server, n int) []Target {
	var out []Target
	for _, t := range append(slices.Clone(def.Keys), p.keep.last(def.Name)...) {
		t.Server = def.Name
		if len(out) < n && !slices.ContainsFunc(out, func(x Target) bool { return x.Key == t.Key }) {
			out = append(out, t)
		}
	}
	return out
}

// keptLocked reports whether inst is one of its server's Min kept instances.
func (p *Pool) keptLocked(inst *instance) bool {
	def := p.servers[inst.key.server]
	if def == nil || def.Min <= 0 {
		return false
	}
	return slices.ContainsFunc(p.knownLocked(def, def.Min), func(t Target) bool { return t.Key == inst.key.key })
}

func (p *Pool) healthLoop() {
	pinged := map[*generation]time.Time{}
	every := p.healthEvery()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		}
		p.checkHealth(pinged)
		if d := p.healthEvery(); d != every {
			every = d
			t.Reset(d)
		}
	}
}

// healthEvery is the health loop's tick: a quarter of the shortest
// health interval, within [healthTickMin, healthTickMax].
func (p *Pool) healthEvery() time.Duration {
	p.mu.Lock()
	defer p.unlock()
	d := healthTickMax
	for _, def := range p.servers {
		if def.HealthInterval > 0 {
			d = min(d, def.HealthInterval/4)
		}
	}
	return max(d, healthTickMin)
}

// checkHealth pings the idle children due a health check, and starts what
// the servers' Min keep. pinged is the health loop's own: when each child
// was last pinged.
func (p *Pool) checkHealth(pinged map[*generation]time.Time) {
	now := p.opts.Now()
	live := map[*generation]bool{}
	p.mu.Lock()
	if p.closed {
		p.unlock()
		return
	}
	for _, inst := range p.instances {
		def, g := p.servers[inst.key.server], inst.gen
		if def == nil || def.HealthInterval <= 0 || inst.phase != phaseReady || g == nil || g.sess == nil {
			continue
		}
		live[g] = true
		last := inst.lastUsed
		if pinged[g].After(last) {
			last = pinged[g]
		}
		if inst.inflight > 0 || now.Sub(last) < def.HealthInterval {
			continue
		}
		pinged[g] = now
		timeout := def.HealthTimeout
		if timeout <= 0 {
			timeout = min(p.opts.ProbeTimeout, def.HealthInterval/2)
		}
		detail := fmt.Sprintf("the child was wedged: a health check's ping got no answer within %s while it was idle, so it was killed and a new one started", timeout)
		p.probeLocked(inst, g, timeout, detail, p.urlCheck(def, timeout), func() { p.replaceWedged(inst, g) })
	}
	p.keepLocked(now)
	p.unlock()
	for g := range pinged {
		if !live[g] {
			delete(pinged, g)
		}
	}
}

// probeLocked pings g in the background, one probe per child at a time,
// bounded by timeout; a child that does not answer is killed as wedged
// (detail says why, for its event and status), then after runs, if set.
// check, if set, runs once the ping is answered: a failure it reports
// (why) kills the child as a silent one is. p.mu is held, so Close never
// waits on a WaitGroup still being added to.
func (p *Pool) probeLocked(inst *instance, g *generation, timeout time.Duration, detail string, check func() string, after func()) {
	if p.closed || g.sess == nil || !g.probing.CompareAndSwap(false, true) {
		return
	}
	p.wg.Go(func() {
		killed := p.probeOnce(inst, g, timeout, detail)
		if !killed && check != nil && g.sess != nil {
			if why := check(); why != "" {
				killed = p.killWedged(inst, g, timeout, "the server failed its health check: "+why+", so its connection was closed and a new one opened")
			}
		}
		g.probing.Store(false)
		if killed && after != nil {
			after()
		}
	})
}

// replaceWedged starts a new child for inst once its wedged child g is
// gone, unless a caller or a stopper got there first.
func (p *Pool) replaceWedged(inst *instance, g *generation) {
	select {
	case <-g.dead:
	case <-p.ctx.Done():
		return
	}
	p.mu.Lock()
	defer p.unlock()
	if p.closed || p.instances[inst.key] != inst || inst.phase != phaseIdle {
		return
	}
	p.logLocked(p.log, slog.LevelInfo, "replacing a wedged child", "server", inst.def.Name, "key", inst.key.key, "instance", inst.id)
	p.startLocked(inst, p.opts.Now())
}

// keepLocked starts the instances the servers' Min keep that are not
// running: made where there is room (evicting nothing), started when idle
// or once their backoff is over. Keys whose owner is gone are left alone.
func (p *Pool) keepLocked(now time.Time) {
	for _, def := range p.servers {
		if def.Min <= 0 {
			continue
		}
		for _, t := range p.knownLocked(def, def.Min) {
			if p.opts.KeyAlive != nil && !p.opts.KeyAlive(t.Key) {
				continue
			}
			inst := p.instances[t.key()]
			if inst == nil {
				if len(p.queue) > 0 || p.countLocked(def.Name) >= cmp.Or(def.Max, DefaultMax) || len(p.instances) >= p.opts.MaxInstances {
					continue
				}
				var err error
				if inst, err = p.createLocked(def, t); err != nil {
					continue
				}
			}
			if inst.phase == phaseIdle || (inst.phase == phaseBackoff && !now.Before(inst.backoffUntil)) {
				p.logLocked(p.log, slog.LevelInfo, "starting a kept instance (min)", "server", def.Name, "key", t.Key, "instance", inst.id, "min", def.Min)
				p.startLocked(inst, now)
			}
		}
	}
}

// warmLocked starts, in the background, a warm listing for each known key
// of defs' Warm servers that has no instance (see warm). p.mu is held.
func (p *Pool) warmLocked(defs []Server) {
	p.keep.set(p.servers)
	if p.closed {
		return
	}
	for _, d := range defs {
		def := p.servers[d.Name]
		if def == nil || !def.Warm {
			continue
		}
		for _, t := range p.knownLocked(def, max(def.Min, 1)) {
			if p.instances[t.key()] == nil && p.keep.startWarm(t.key(), true) {
				p.wg.Go(func() { p.warm(t) })
			}
		}
	}
}

// warm starts a child for t and lists its tools into the schema cache,
// unless the cache has them already; the instance then idles out.
func (p *Pool) warm(t Target) {
	defer p.keep.startWarm(t.key(), false)
	ctx, cancel := context.WithTimeout(p.ctx, 2*p.opts.StartTimeout)
	defer cancel()
	if _, ok := p.ToolListing(ctx, t); ok {
		return
	}
	err := p.Do(ctx, t, func(s *client.Session) error {
		_, err := s.Tools(ctx)
		return err
	})
	if err != nil {
		p.log.Warn("warming a server's tool list failed", "server", t.Server, "key", t.Key, "err", err)
		return
	}
	p.log.Info("warmed a server's tool list", "server", t.Server, "key", t.Key)
}

// urlCheck is def's health URL check (Server.HealthURL), nil if it has
// none: a GET bounded by timeout, failing (why) unless it is answered with
// the status expected. The request carries none of the server's headers
// or sign-in, so a health URL elsewhere learns no secret.
func (p *Pool) urlCheck(def *Server, timeout time.Duration) func() string {
	if def.HealthURL == "" || def.URL == "" {
		return nil
	}
	url, want := def.HealthURL, cmp.Or(def.HealthExpect, http.StatusOK)
	return func() string {
		ctx, cancel := context.WithTimeout(p.ctx, timeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Sprintf("GET %s: %v", url, err)
		}
		resp, err := p.opts.HTTPClient.Do(req)
		if err != nil {
			if p.ctx.Err() != nil {
				return "" // the pool is closing
			}
			if ctx.Err() != nil {
				return fmt.Sprintf("GET %s got no answer within %s", url, timeout)
			}
			return fmt.Sprintf("GET %s failed (%v)", url, errors.Unwrap(err))
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) //nolint:errcheck // drained for reuse only
		resp.Body.Close()
		if resp.StatusCode != want {
			return fmt.Sprintf("GET %s answered %d, want %d", url, resp.StatusCode, want)
		}
		return ""
	}
}
