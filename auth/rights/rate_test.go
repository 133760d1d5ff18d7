package rights_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/auth/rights"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]rights.Rate{
		"100/m": {100, time.Minute}, "5/s": {5, time.Second}, "1/h": {1, time.Hour}, "": {},
	} {
		got, err := rights.ParseRate(in)
		if err != nil || got != want || got.String() != in {
			t.Errorf("ParseRate(%q) = %v (%q), %v; want %v", in, got, got.String(), err, want)
		}
	}
	for _, in := range []string{"100", "100/d", "0/m", "-1/m", "x/m", "/m", "100/"} {
		if _, err := rights.ParseRate(in); err == nil || !strings.Contains(err.Error(), `"100/m"`) {
			t.Errorf("ParseRate(%q): %v, want an error showing the form", in, err)
		}
	}
	var r rights.Rule
	if err := json.Unmarshal([]byte(`{"rate":"10/x"}`), &r); err == nil || !strings.Contains(err.Error(), `invalid rate "10/x"`) {
		t.Errorf("a rule with rate 10/x: %v", err)
	}
	if err := json.Unmarshal([]byte(`{"rate":"10/s","burst":3}`), &r); err != nil || r.Limit().String() != "10/s (burst 3)" {
		t.Errorf("rule %+v, %v", r, err)
	}
	if b, _ := json.Marshal(rights.Rule{Rate: rights.Rate{2, time.Hour}}); string(b) != `{"rate":"2/h"}` {
		t.Errorf("marshal = %s", b)
	}
	if b, _ := json.Marshal(rights.Rule{}); string(b) != `{}` {
		t.Errorf("marshal of no rate = %s", b)
	}
}

// TestLimitIsTheTightest: the caller's limit is the tightest rate of its
// rules; a rule without one does not widen it.
func TestLimitIsTheTightest(t *testing.T) {
	r := rights.Rights{{Servers: []string{"a"}}, {Rate: rights.Rate{100, time.Minute}}, {Rate: rights.Rate{2, time.Second}}}
	if got := r.Limit().String(); got != "100/m" {
		t.Errorf("Limit() = %q, want 100/m (2/s is 120/m)", got)
	}
	if got := (rights.Rights{{Rate: rights.Rate{1, time.Second}}, {Rate: rights.Rate{100, time.Minute}}}).Limit().String(); got != "1/s" {
		t.Errorf("Limit() = %q, want 1/s (60/m is tighter than 100/m)", got)
	}
	if !(rights.Rights{{}}).Limit().IsZero() {
		t.Error("rights without a rate have a limit")
	}
}

// TestCoversRate: a minter with a rate mints tokens no looser.
func TestCoversRate(t *testing.T) {
	minter := rights.Rights{{Rate: rights.Rate{10, time.Minute}}}
	for _, tc := range []struct {
		q    rights.Rule
		want string // "" = covered; else the excess's value
	}{
		{rights.Rule{Rate: rights.Rate{10, time.Minute}}, ""},
		{rights.Rule{Rate: rights.Rate{5, time.Minute}}, ""},
		{rights.Rule{Rate: rights.Rate{1, time.Second}}, "1/s"},
		{rights.Rule{Rate: rights.Rate{10, time.Minute}, Burst: 20}, "10/m (burst 20)"},
		{rights.Rule{}, "(none)"},
	} {
		err := minter.Covers(tc.q)
		var ex *rights.Excess
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Covers(%v): %v, want covered", tc.q.Limit(), err)
		case tc.want != "" && (err == nil || !asExcess(err, &ex) || ex.Field != "rate" || ex.Value != tc.want):
			t.Errorf("Covers(%v): %v, want rate %s beyond", tc.q.Limit(), err, tc.want)
		}
	}
	if err := (rights.Rights{{}}).Covers(rights.Rule{Rate: rights.Rate{1, time.Hour}}); err != nil {
		t.Errorf("an unlimited minter: %v", err)
	}
}

func asExcess(err error, ex **rights.Excess) bool {
	e, ok := err.(*rights.Excess)
	*ex = e
	return ok
}

func TestCheckLimits(t *testing.T) {
	if err := (rights.Rights{{Burst: -1, Rate: rights.Rate{1, time.Second}}}).CheckLimits(); err == nil {
		t.Error("negative burst accepted")
	}
	if err := (rights.Rights{{Burst: 3}}).CheckLimits(); err == nil || !strings.Contains(err.Error(), "without a rate") {
		t.Errorf("burst without rate: %v", err)
	}
}
