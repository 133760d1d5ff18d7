package jsonrpc

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
)

// Cancellation (basic/utilities/cancellation): "When a party wants to
// cancel an in-progress request, it sends a notifications/cancelled
// notification containing: The ID of the request to cancel, An optional
// reason string". "Receivers of cancellation notifications SHOULD: Stop
// processing the cancelled request, Free associated resources, Not send a
// response for the cancelled request", and "MAY ignore cancellation
// notifications if: The referenced request is unknown, Processing has
// already completed".

// CancelledID returns the requestId of notifications/cancelled's params
// (valid JSON), raw; nil if there is none.
func CancelledID(params []byte) json.RawMessage { return Member(params, `"requestId"`) }

// AppendCancelled appends notifications/cancelled for the request of the
// integer id, with reason ("" = none), to b.
func AppendCancelled(b []byte, id int64, reason string) []byte {
	b = append(b, `{"jsonrpc":"2.0","method":"`+MethodCancelled+`","params":{"requestId":`...)
	b = strconv.AppendInt(b, id, 10)
	if reason != "" {
		b = append(b, `,"reason":`...)
		b = AppendString(b, reason)
	}
	return append(b, "}}"...)
}

// InFlight is a receiver's requests in flight, each with what cancels it,
// by id: what notifications/cancelled acts on. Ids are told apart as
// JSON-RPC tells them, by their JSON text (1 is not "1"). Safe for
// concurrent use; the zero value is ready.
type InFlight struct {
	mu    sync.Mutex
	calls map[string]*inFlight // guarded by mu; by raw id
}

type inFlight struct{ cancel context.CancelFunc }

// Add registers the request of id (raw JSON) with cancel and returns what
// removes it once it is done. A later request of the same id takes its
// place; the earlier one's remove then leaves it there.
func (f *InFlight) Add(id []byte, cancel context.CancelFunc) (remove func()) {
	c, key := &inFlight{cancel}, string(id)
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]*inFlight{}
	}
	f.calls[key] = c
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		if f.calls[key] == c {
			delete(f.calls, key)
		}
		f.mu.Unlock()
	}
}

// Cancelled acts on the params of notifications/cancelled (valid JSON):
// the request they name is cancelled if it is in flight, and ignored if
// not. It reports whether one was cancelled.
func (f *InFlight) Cancelled(params []byte) bool {
	f.mu.Lock()
	c := f.calls[string(CancelledID(params))]
	f.mu.Unlock()
	if c != nil {
		c.cancel()
	}
	return c != nil
}

// CancelAll cancels every request in flight; each stays registered until
// removed.
func (f *InFlight) CancelAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		c.cancel()
	}
}

// Len is how many requests are in flight.
func (f *InFlight) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}
