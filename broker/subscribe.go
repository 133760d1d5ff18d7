package broker

import (
	"cmp"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"mcpx.dev/mcpx/internal/defaults"
	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/mcp/jsonrpc"
	"mcpx.dev/mcpx/pool"
)

// Resource subscriptions (MCP server/resources, "Subscriptions"): every
// caller subscribed to a URI on one instance shares one child
// subscription. The first subscriber's resources/subscribe reaches the
// child; later ones are counted; the last one to leave (Close, or its
// connection gone) sends resources/unsubscribe. The child's
// notifications/resources/updated reach the subscribers of that URI on
// that instance only, never another instance's, nor a caller of the same
// instance that did not subscribe. When the instance stops (crash, reap of
// a gone owner, stop, reload, the daemon's end) its subscriptions end and
// each subscriber is told why (Watch.Ended). While subscribed, the
// instance is kept from idling out.

// Watch is what a subscriber is told. Both functions run on the broker's
// goroutines (a child's reader, a subscription's watcher): they must not
// block or call the broker.
type Watch struct {
	// Updated gets the params of each notifications/resources/updated of
	// the URI, as the child sent them. Required.
	Updated func(params json.RawMessage)
	// Ended, if set, is told once why the subscription ended when it ends
	// other than by Close: the instance stopped, the daemon is stopping.
	Ended func(why string)
}

// Subscription is one caller's subscription to a resource; Close ends it.
type Subscription struct {
	e     *subEntry
	w     Watch
	done  chan struct{}
	once  sync.Once
	why   string // set before done is closed
	owner *subscriptions
}

// URI is the subscribed resource's URI.
func (s *Subscription) URI() string { return s.e.k.uri }

// Done is closed when the subscription has ended (Close, or the instance
// stopped); Why then says why.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Why says why the subscription ended; "" while it lasts.
func (s *Subscription) Why() string {
	select {
	case <-s.done:
		return s.why
	default:
		return ""
	}
}

// Close leaves the subscription; the last subscriber of a URI on an
// instance to leave ends the child's subscription. Safe to call more than
// once and after the subscription ended.
func (s *Subscription) Close() {
	s.owner.leave(s)
	s.finish("unsubscribed", false)
}

// finish marks s ended with why, telling its Ended if tell.
func (s *Subscription) finish(why string, tell bool) {
	s.once.Do(func() {
		s.why = why
		close(s.done)
		if tell && s.w.Ended != nil {
			s.w.Ended(why)
		}
	})
}

// subKey names one child subscription: the instance (pool server name and
// scope key) and the URI.
type subKey struct{ server, key, uri string }

// subEntry is one child subscription and its subscribers.
type subEntry struct {
	k      subKey
	target pool.Target
	touch  time.Duration   // how often the instance is marked in use (touchEvery)
	ready  chan struct{}   // closed once the child answered resources/subscribe
	err    error           // set before ready is closed: the child refused
	sess   *client.Session // set before ready is closed, on success
	// unlisten ends a stateless-era child's subscriptions/listen (its way
	// to subscribe); nil for a handshake-era child. Set with sess.
	unlisten func()
	stop     chan struct{} // closed when the last subscriber left (under subscriptions.mu)
	gone     chan struct{} // closed when the watcher is done (the child unsubscribed)

	subs map[*Subscription]bool // guarded by subscriptions.mu
}

// subscriptions are the broker's child subscriptions.
type subscriptions struct {
	ctx    context.Context // ends with the broker; the watchers stop
	cancel context.CancelFunc
	wg     sync.WaitGroup // the watchers

	mu sync.Mutex
	m  map[subKey]*subEntry // guarded by mu
	// leaving are the entries whose last subscriber left and whose child
	// is being unsubscribed: a new subscription of the same key waits for
	// it, so that the child never sees its subscribe before the old
	// unsubscribe. Guarded by mu.
	leaving map[subKey]*subEntry
	live    int // guarded by mu: child subscriptions in force (subscribed, not yet unsubscribed)
}

func newSubscriptions() *subscriptions {
	ctx, cancel := context.WithCancel(context.Background())
	return &subscriptions{ctx: ctx, cancel: cancel, m: map[subKey]*subEntry{}, leaving: map[subKey]*subEntry{}}
}

// touchEvery is how often a subscribed instance is marked in use: a third
// of its idle timeout (the server's, else the pool's; the default's when
// neither is set), between a second and a minute.
func touchEvery(server, pool time.Duration) time.Duration {
	d := cmp.Or(server, pool, defaults.IdleTimeout) / 3
	return min(max(d, time.Second), time.Minute)
}

// close ends every subscription and waits for the watchers. A watcher is
// started only under mu with ctx not done, so none starts once close has
// cancelled it.
func (ss *subscriptions) close() {
	ss.mu.Lock()
	ss.cancel()
	ss.mu.Unlock()
	ss.wg.Wait()
}

// SubscribeResource subscribes r's caller to uri on the instance of r's
// scope: the child is sent resources/subscribe only if no other caller is
// subscribed to uri there already. w.Updated then gets the child's updates
// of uri until Close. A child that refuses (no subscribe capability, an
// unknown URI) is the error, as it answered.
func (b *Broker) SubscribeResource(ctx context.Context, r Request, uri string, w Watch) (*Subscription, error) {
	if uri == "" {
		return nil, &Error{Kind: KindBadRequest, Op: "subscribe", Server: r.Server, Field: "uri",
			Msg: "a subscription needs the resource's uri", Hint: "name a uri the server's resources list"}
	}
	res, err := b.resolve(r)
	if err != nil {
		return nil, err
	}
	if res.target.Ephemeral {
		return nil, &Error{Kind: KindBadRequest, Op: "subscribe", Server: r.Server,
			Msg:  "the server's instances last one call each (scope call), so none can hold a subscription",
			Hint: "give the server a longer-lived scope to subscribe to its resources"}
	}
	ss := b.subs
	k := subKey{res.target.Server, res.target.Key, uri}
	ss.mu.Lock()
	if ss.ctx.Err() != nil {
		ss.mu.Unlock()
		return nil, &Error{Kind: KindUnavailable, Op: "subscribe", Server: r.Server, Msg: "the daemon is stopping"}
	}
	e := ss.m[k]
	first := e == nil
	prev := ss.leaving[k]
	if first {
		e = &subEntry{k: k, target: res.target, subs: map[*Subscription]bool{},
			touch: touchEvery(res.def.IdleTimeout.D(), b.currentConfig().Pool.IdleTimeout.D()),
			ready: make(chan struct{}), stop: make(chan struct{}), gone: make(chan struct{})}
		ss.m[k] = e
	}
	sub := &Subscription{e: e, w: w, done: make(chan struct{}), owner: ss}
	e.subs[sub] = true
	ss.mu.Unlock()

	if first {
		if prev != nil {
			select {
			case <-prev.gone:
			case <-ctx.Done():
			}
		}
		params, _ := json.Marshal(map[string]string{"uri": uri})
		err = b.run(withCaller(ctx, r), res, r.Server, "subscribe", func(ctx context.Context, s *client.Session) error {
			if s.Era() == client.EraStateless {
				// 2026-07-28 removed resources/subscribe: a held
				// subscriptions/listen naming the resource instead.
				stop, err := s.ListenResource(ctx, uri)
				if err != nil {
					return &Error{Kind: KindBadRequest, Op: "subscribe", Server: r.Server, Field: "uri",
						Msg: "the server does not offer updates of " + uri, Hint: "subscribe to a resource the server lists as subscribable", Err: err}
				}
				e.sess, e.unlisten = s, stop
				return nil
			}
			if _, err := s.Call(ctx, jsonrpc.MethodResourcesSubscribe, params, nil); err != nil {
				return err
			}
			e.sess = s
			return nil
		})
		// ready is closed under the lock: leave and the watcher's first
		// look agree on whether a subscriber left while subscribing.
		ss.mu.Lock()
		if err == nil && ss.ctx.Err() != nil {
			err = &Error{Kind: KindUnavailable, Op: "subscribe", Server: r.Server, Msg: "the daemon is stopping"}
		}
		e.err = err
		if err != nil {
			if ss.m[k] == e {
				delete(ss.m, k)
			}
			close(e.gone)
		} else {
			ss.live++
			ss.wg.Go(func() { b.watchSubscription(e) })
		}
		close(e.ready)
		ss.mu.Unlock()
	} else {
		select {
		case <-e.ready:
		case <-ctx.Done():
			sub.Close()
			return nil, b.translate(ctx.Err(), "subscribe", r.Server)
		}
	}
	if e.err != nil {
		sub.finish("the server refused the subscription", false)
		return nil, e.err
	}
	return sub, nil
}

// leave removes s from its entry; the last subscriber's leaving tells the
// watcher to end the child's subscription.
func (ss *subscriptions) leave(s *Subscription) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	e := s.e
	if !e.subs[s] {
		return
	}
	delete(e.subs, s)
	if len(e.subs) > 0 || ss.m[e.k] != e {
		return
	}
	select {
	case <-e.ready:
		if e.err != nil {
			return // the subscriber that made it removes it
		}
	default:
		return // still subscribing: the watcher finds no subscriber and ends it
	}
	delete(ss.m, e.k)
	ss.leaving[e.k] = e
	close(e.stop)
}

// watchSubscription keeps e's instance in use while e has subscribers,
// and ends e when the last leaves (resources/unsubscribe to the child),
// when the child's session ends, or when the broker closes.
func (b *Broker) watchSubscription(e *subEntry) {
	ss := b.subs
	defer func() {
		ss.mu.Lock()
		ss.live--
		if ss.leaving[e.k] == e {
			delete(ss.leaving, e.k)
		}
		close(e.gone)
		ss.mu.Unlock()
	}()
	// A subscriber that left while the child was still subscribing.
	ss.mu.Lock()
	if len(e.subs) == 0 && ss.m[e.k] == e {
		delete(ss.m, e.k)
		ss.leaving[e.k] = e
		close(e.stop)
	}
	ss.mu.Unlock()
	tick := time.NewTicker(e.touch)
	defer tick.Stop()
	for {
		select {
		case <-e.stop:
			if e.unlisten != nil {
				e.unlisten()
				return
			}
			ctx, cancel := context.WithTimeout(ss.ctx, 10*time.Second)
			params, _ := json.Marshal(map[string]string{"uri": e.k.uri})
			if _, err := e.sess.Call(ctx, jsonrpc.MethodResourcesUnsubscribe, params, nil); err != nil {
				b.log.Debug(jsonrpc.MethodResourcesUnsubscribe, "server", e.k.server, "key", e.k.key, "err", err)
			}
			cancel()
			return
		case <-e.sess.Done():
			b.endSubscription(e, "the server's instance stopped; subscribe again to follow the resource on a new one")
			return
		case <-ss.ctx.Done():
			b.endSubscription(e, "the daemon is stopping")
			return
		case <-tick.C:
			b.touchInstance(e)
		}
	}
}

// touchInstance marks e's instance used, so that the idle reaper leaves an
// instance that has subscribers. One seen gone is not touched (a touch
// that races its end may start a new instance, which then idles out).
func (b *Broker) touchInstance(e *subEntry) {
	select {
	case <-e.sess.Done():
		return
	default:
	}
	ctx, cancel := context.WithTimeout(b.subs.ctx, 10*time.Second)
	defer cancel()
	b.pool.Do(ctx, e.target, func(*client.Session) error { return nil }) //nolint:errcheck // a failed touch is a gone instance, seen on its session
}

// endSubscription ends e for every subscriber, telling them why.
func (b *Broker) endSubscription(e *subEntry, why string) {
	ss := b.subs
	ss.mu.Lock()
	if ss.m[e.k] == e {
		delete(ss.m, e.k)
	}
	subs := make([]*Subscription, 0, len(e.subs))
	for s := range e.subs {
		subs = append(subs, s)
	}
	clear(e.subs)
	ss.mu.Unlock()
	for _, s := range subs {
		s.finish(why, true)
	}
}

// resourceUpdated hands a child's notifications/resources/updated to the
// subscribers of its URI on that instance: those of the URI itself and of
// a URI it lies below (the specification lets a server report a
// sub-resource of the one subscribed to).
func (b *Broker) resourceUpdated(server, key string, params json.RawMessage) {
	var p struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(params, &p) != nil || p.URI == "" {
		return
	}
	ss := b.subs
	ss.mu.Lock()
	var to []*Subscription
	for k, e := range ss.m {
		if k.server != server || k.key != key || !covers(k.uri, p.URI) {
			continue
		}
		select {
		case <-e.ready:
		default:
			continue
		}
		for s := range e.subs {
			to = append(to, s)
		}
	}
	ss.mu.Unlock()
	for _, s := range to {
		s.w.Updated(params)
	}
}

// covers reports whether an update of uri concerns a subscription to sub:
// the same URI, or one below it (sub followed by "/", "#" or "?").
func covers(sub, uri string) bool {
	if uri == sub {
		return true
	}
	if !strings.HasPrefix(uri, sub) {
		return false
	}
	if strings.HasSuffix(sub, "/") {
		return true
	}
	c := uri[len(sub)]
	return c == '/' || c == '#' || c == '?'
}

// ChildSubscriptions is how many resource subscriptions the broker holds
// with children (each shared by every caller subscribed to its URI on its
// instance): subscribed, and not yet unsubscribed.
func (b *Broker) ChildSubscriptions() int {
	b.subs.mu.Lock()
	defer b.subs.mu.Unlock()
	return b.subs.live
}
