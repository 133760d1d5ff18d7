package client_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"mcpx.dev/mcpx/client"
)

// TestHoldLease: a held lease outlives its ttl while it is renewed, and a
// call naming it is refused once it is released; a renewal that fails (the
// lease was released behind the holder's back) is reported with its id,
// and Stop ends the renewals.
func TestHoldLease(t *testing.T) {
	d := startDaemon(t, map[string]string{"p": `{"scope": "pid"}`})
	ctx := t.Context()
	call := func(lease string) error {
		_, err := d.unix.CallTool(ctx, client.Caller{Lease: lease}, "p", "pid", json.RawMessage(`{}`), nil)
		return err
	}
	l, err := d.unix.HoldLease(ctx, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.TTL != time.Second {
		t.Errorf("ttl %s, want the 1s granted", l.TTL)
	}
	time.Sleep(3 * l.TTL) // three ttls: renewed twice in each
	if err := call(l.ID); err != nil {
		t.Errorf("a call under the held lease after three ttls: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if p := asProblem(t, call(l.ID)); p.Status != http.StatusBadRequest || p.Field != "Mcpx-Lease" {
		t.Errorf("a call under the released lease: %d %s", p.Status, p.Detail)
	}

	failed := make(chan string, 8)
	l2, err := d.unix.HoldLease(ctx, time.Second, func(id string, err error) { failed <- id })
	if err != nil {
		t.Fatal(err)
	}
	if err := d.unix.ReleaseLease(ctx, l2.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-failed:
		if id != l2.ID {
			t.Errorf("a failed renewal reported for %s, want %s", id, l2.ID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no failed renewal reported")
	}
	l2.Stop()
	l2.Stop() // a second Stop is harmless
}
