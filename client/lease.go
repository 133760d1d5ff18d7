package client

import (
	"context"
	"sync"
	"time"
)

// HeldLease is a lease its holder renews every ttl/3 until Stop or
// Release (HoldLease). A holder killed outright renews no more, and the
// lease ends within its ttl.
type HeldLease struct {
	ID  string
	TTL time.Duration // each renewal's length, as the daemon granted it

	c        *Client
	stopOnce sync.Once
	stop     chan struct{} // closed by Stop
	renewed  chan struct{} // closed when the renewing goroutine has returned
}

// HoldLease acquires a lease for ttl (as AcquireLease) and renews it every
// ttl/3, as granted, until Stop or Release. A renewal that fails goes to
// onError (nil: ignored) and is retried at the next tick: the lease has
// two more before it ends. Renewals use ctx's values but not its
// cancellation, so an interrupted holder keeps its lease until it lets go.
// The caller owns the lease and must Stop or Release it.
func (c *Client) HoldLease(ctx context.Context, ttl time.Duration, onError func(id string, err error)) (*HeldLease, error) {
	lease, err := c.AcquireLease(ctx, ttl)
	if err != nil {
		return nil, err
	}
	if d, err := time.ParseDuration(lease.TTL); err == nil && d > 0 {
		ttl = d // as the daemon granted it
	}
	l := &HeldLease{ID: lease.ID, TTL: ttl, c: c, stop: make(chan struct{}), renewed: make(chan struct{})}
	go l.renew(context.WithoutCancel(ctx), onError)
	return l, nil
}

func (l *HeldLease) renew(ctx context.Context, onError func(string, error)) {
	defer close(l.renewed)
	t := time.NewTicker(l.TTL / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			rctx, cancel := context.WithTimeout(ctx, l.TTL/3)
			_, err := l.c.RenewLease(rctx, l.ID, 0)
			cancel()
			if err != nil && onError != nil {
				onError(l.ID, err)
			}
		}
	}
}

// Stop ends the renewals and waits for one in flight. The lease lives on
// until it is released or its ttl runs out. Stop may be called more than
// once.
func (l *HeldLease) Stop() {
	l.stopOnce.Do(func() { close(l.stop) })
	<-l.renewed
}

// Release stops the renewals and releases the lease (ReleaseLease).
func (l *HeldLease) Release(ctx context.Context) error {
	l.Stop()
	return l.c.ReleaseLease(ctx, l.ID)
}
