package egress

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"
)

// Past the burst, one refusal is logged per RefusalLogEvery, and it says
// how many went unlogged since the last record.
func TestRefusalLogSaysHowManyWentUnlogged(t *testing.T) {
	var buf bytes.Buffer
	s := &Served{p: &Proxy{opts: Options{RefusalLogEvery: time.Hour}}, log: slog.New(slog.NewJSONHandler(&buf, nil))}
	for range RefusalLogBurst {
		s.logRefusal("evil.example.test", "host", "evil.example.test")
	}
	for i := range 5 + maxUnloggedHosts {
		host := fmt.Sprintf("h%02d.example.test", i) // more hosts than a record names
		if i < 5 {
			host = "evil.example.test"
		}
		s.logRefusal(host, "host", host)
	}
	s.logMu.Lock()
	s.lastLogged = s.lastLogged.Add(-2 * time.Hour) // an interval has passed
	s.logMu.Unlock()
	s.logRefusal("evil.example.test", "host", "evil.example.test")
	s.logRefusal("evil.example.test", "host", "evil.example.test") // within the new interval: not logged

	var recs []map[string]any
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var r map[string]any
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	if len(recs) != RefusalLogBurst+1 {
		t.Fatalf("%d records, want the burst and one after the interval, %d", len(recs), RefusalLogBurst+1)
	}
	if _, ok := recs[RefusalLogBurst-1]["unlogged"]; ok {
		t.Errorf("a record of the burst says some went unlogged: %v", recs[RefusalLogBurst-1])
	}
	after := recs[RefusalLogBurst]
	if got := after["unlogged"]; got != float64(5+maxUnloggedHosts) {
		t.Errorf("the record after the interval: unlogged = %v, want %d: %v", got, 5+maxUnloggedHosts, after)
	}
	// The hosts: evil's five, then the first others until the bound.
	want := "evil.example.test (5), h05.example.test (1), h06.example.test (1), h07.example.test (1), h08.example.test (1), h09.example.test (1), h10.example.test (1), h11.example.test (1)"
	if got := after["unloggedHosts"]; got != want {
		t.Errorf("the record after the interval names %q, want %q", got, want)
	}
}
