package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// cell is one measurement: one path at one concurrency in one round.
type cell struct {
	Path        string  `json:"path"`
	C           int     `json:"c"`
	Round       int     `json:"round"`
	Calls       int     `json:"calls"`
	Seconds     float64 `json:"seconds"`
	P50us       float64 `json:"p50us"`
	P99us       float64 `json:"p99us"`
	CallsPerSec float64 `json:"callsPerSec"`
	// CPU per call, µs: this process (client, and for H and Hraw also the
	// server), the daemon, the child serving the call; -1 = not applicable.
	ClientCPUus float64 `json:"clientCPUus"`
	DaemonCPUus float64 `json:"daemonCPUus"`
	ChildCPUus  float64 `json:"childCPUus"`
}

// maxErrors stops a measurement whose calls keep failing.
const maxErrors = 10

// measure warms p at concurrency c for o.warm, then measures it for
// o.duration or o.maxCalls calls, whichever comes first.
func measure(ctx context.Context, p *path, c int, o *options) (cell, error) {
	if _, _, err := load(ctx, p, c, o.warm, o.maxCalls, false); err != nil {
		return cell{}, err
	}
	if p.during != nil {
		stop := p.during()
		defer stop()
	}
	dpid, cpid := p.procs()
	self0, d0, c0 := selfCPU(), procCPU(dpid), procCPU(cpid)
	lat, elapsed, err := load(ctx, p, c, o.duration, o.maxCalls, true)
	self1, d1, c1 := selfCPU(), procCPU(dpid), procCPU(cpid)
	if err != nil {
		return cell{}, err
	}
	n := len(lat)
	slices.Sort(lat)
	perCall := func(pid int, a, b time.Duration) float64 {
		if pid <= 0 || b == 0 {
			return -1
		}
		return us(b-a) / float64(n)
	}
	return cell{
		Path: p.name, C: c, Calls: n, Seconds: elapsed.Seconds(),
		P50us:       us(quantile(lat, 0.50)),
		P99us:       us(quantile(lat, 0.99)),
		CallsPerSec: float64(n) / elapsed.Seconds(),
		ClientCPUus: us(self1-self0) / float64(n),
		DaemonCPUus: perCall(dpid, d0, d1),
		ChildCPUus:  perCall(cpid, c0, c1),
	}, nil
}

// load runs c callers in a loop until d has passed or maxCalls calls have
// started, and returns every call's latency (if keep) and the elapsed time.
func load(ctx context.Context, p *path, c int, d time.Duration, maxCalls int, keep bool) ([]time.Duration, time.Duration, error) {
	var (
		started atomic.Int64
		nerr    atomic.Int64
		errOnce sync.Once
		first   error
		wg      sync.WaitGroup
	)
	lats := make([][]time.Duration, c)
	start := time.Now()
	deadline := start.Add(d)
	for w := range c {
		if keep {
			lats[w] = make([]time.Duration, 0, min(maxCalls/c+1, 1<<16))
		}
		wg.Go(func() {
			for ctx.Err() == nil && started.Add(1) <= int64(maxCalls) {
				t0 := time.Now()
				err := p.call(ctx)
				t1 := time.Now()
				if err != nil {
					errOnce.Do(func() { first = err })
					if nerr.Add(1) >= maxErrors {
						return
					}
				} else if keep {
					lats[w] = append(lats[w], t1.Sub(t0))
				}
				if t1.After(deadline) {
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if n := nerr.Load(); n > 0 {
		return nil, 0, fmt.Errorf("%d calls failed, the first with: %w", n, first)
	}
	all := slices.Concat(lats...)
	if keep && len(all) == 0 {
		return nil, 0, errors.New("no call completed")
	}
	return all, elapsed, nil
}

// quantile of sorted latencies, nearest rank.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
