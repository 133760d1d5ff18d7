package jsonrpc

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
)

// TestCancelled: the notification a sender writes reads back as the
// request it cancels, and a receiver finds the id in any params.
func TestCancelled(t *testing.T) {
	msg := AppendCancelled(nil, 42, `timeout: the "caller's" deadline passed`)
	if !json.Valid(msg) {
		t.Fatalf("AppendCancelled = %s: not JSON", msg)
	}
	m, err := Parse(msg)
	if err != nil || !m.IsNotification() || m.Method != MethodCancelled {
		t.Fatalf("AppendCancelled = %s: parsed %+v, %v", msg, m, err)
	}
	if id := CancelledID(m.Params); string(id) != "42" {
		t.Errorf("CancelledID(%s) = %s, want 42", m.Params, id)
	}
	if got := string(AppendCancelled(nil, 1, "")); got != `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}` {
		t.Errorf("AppendCancelled without a reason = %s", got)
	}
	for params, want := range map[string]string{
		`{"requestId":"abc","reason":"x"}`:       `"abc"`,
		` { "reason" : "x" , "requestId" : 7 } `: `7`,
		`{"reason":"no id"}`:                     ``,
		`null`:                                   ``,
		``:                                       ``,
	} {
		if got := CancelledID([]byte(params)); string(got) != want {
			t.Errorf("CancelledID(%s) = %s, want %s", params, got, want)
		}
	}
}

// TestInFlight: a cancellation reaches the request its id names, and
// only while it is in flight; a reused id belongs to the later request.
func TestInFlight(t *testing.T) {
	var f InFlight
	cancelled := map[string]bool{}
	var mu sync.Mutex
	add := func(id, name string) func() {
		return f.Add([]byte(id), func() { mu.Lock(); cancelled[name] = true; mu.Unlock() })
	}
	removeNum := add(`1`, "number 1")
	add(`"1"`, "string 1")
	removeOld := add(`7`, "old 7")
	add(`7`, "new 7")
	removeOld() // the old request of id 7 is answered: the new one stays
	if f.Len() != 3 {
		t.Errorf("Len = %d, want 3", f.Len())
	}
	for _, tt := range []struct {
		params string
		want   bool
	}{
		{`{"requestId":1,"reason":"r"}`, true},
		{`{"requestId":7}`, true},
		{`{"requestId":2}`, false},
		{`{"reason":"no id"}`, false},
	} {
		if got := f.Cancelled([]byte(tt.params)); got != tt.want {
			t.Errorf("Cancelled(%s) = %v, want %v", tt.params, got, tt.want)
		}
	}
	want := map[string]bool{"number 1": true, "new 7": true}
	if fmt.Sprint(cancelled) != fmt.Sprint(want) {
		t.Errorf("cancelled %v, want %v", cancelled, want)
	}
	removeNum()
	if f.Cancelled([]byte(`{"requestId":1}`)) {
		t.Error("a request that is done was cancelled")
	}
	f.CancelAll()
	if !cancelled["string 1"] || cancelled["old 7"] {
		t.Errorf("after CancelAll cancelled %v: want every request in flight, and only those", cancelled)
	}
}

// TestInFlightConcurrent is for the race detector: requests come and go
// while cancellations arrive.
func TestInFlightConcurrent(t *testing.T) {
	var f InFlight
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				id := fmt.Sprint(i*1000 + j)
				remove := f.Add([]byte(id), func() {})
				f.Cancelled([]byte(`{"requestId":` + id + `}`))
				remove()
			}
		})
	}
	wg.Go(func() {
		for range 100 {
			f.CancelAll()
			f.Len()
		}
	})
	wg.Wait()
	if f.Len() != 0 {
		t.Errorf("Len = %d after every request was removed", f.Len())
	}
}
