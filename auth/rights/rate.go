package rights

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rate is a limit on how often: Count events per Per. The zero Rate is no
// limit. It reads and writes as "<count>/<unit>", the unit s, m or h
// ("100/m"); ParseRate says what it accepts.
type Rate struct {
	Count int
	Per   time.Duration
}

// RateForm is the accepted form of a Rate, for error messages.
const RateForm = `"<count>/s", "<count>/m" or "<count>/h", such as "100/m"`

var rateUnits = map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}

// ParseRate reads "100/m": a positive count, a slash and a unit, s
// (second), m (minute) or h (hour). "" is the zero Rate (no limit).
func ParseRate(s string) (Rate, error) {
	if s == "" {
		return Rate{}, nil
	}
	n, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	count, err := strconv.Atoi(n)
	per, known := rateUnits[unit]
	if !ok || err != nil || count <= 0 || !known {
		return Rate{}, fmt.Errorf("invalid rate %q: want %s", s, RateForm)
	}
	return Rate{Count: count, Per: per}, nil
}

// IsZero reports whether r is no limit.
func (r Rate) IsZero() bool { return r.Count <= 0 || r.Per <= 0 }

// PerSecond is r as events per second; 0 for no limit.
func (r Rate) PerSecond() float64 {
	if r.IsZero() {
		return 0
	}
	return float64(r.Count) / r.Per.Seconds()
}

// String is r's form ("100/m"); "" for no limit.
func (r Rate) String() string {
	if r.IsZero() {
		return ""
	}
	for u, d := range rateUnits {
		if d == r.Per {
			return strconv.Itoa(r.Count) + "/" + u
		}
	}
	return fmt.Sprintf("%d/%s", r.Count, r.Per)
}

// MarshalJSON writes r as its String.
func (r Rate) MarshalJSON() ([]byte, error) { return json.Marshal(r.String()) }

// UnmarshalJSON reads a rate string (ParseRate).
func (r *Rate) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a rate string, %s, got %s", RateForm, b)
	}
	v, err := ParseRate(s)
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// Limit is a caller's rate limit: Rate with its Burst (the calls that may
// come at once; 0 = Rate.Count). The zero Limit is none.
type Limit struct {
	Rate  Rate
	Burst int
}

// IsZero reports whether l is no limit.
func (l Limit) IsZero() bool { return l.Rate.IsZero() }

// BurstOrCount is l's burst: Burst, or the rate's count when it is 0.
func (l Limit) BurstOrCount() int {
	if l.Burst > 0 {
		return l.Burst
	}
	return l.Rate.Count
}

// String is "100/m" or, with a burst other than the count, "100/m (burst
// 20)".
func (l Limit) String() string {
	if l.Burst > 0 && l.Burst != l.Rate.Count {
		return fmt.Sprintf("%s (burst %d)", l.Rate, l.Burst)
	}
	return l.Rate.String()
}

// tighter reports whether l is a lower limit than m: fewer calls per
// second, or as many with a smaller burst. No limit is the loosest.
func (l Limit) tighter(m Limit) bool {
	switch {
	case l.IsZero():
		return false
	case m.IsZero():
		return true
	case l.Rate.PerSecond() != m.Rate.PerSecond():
		return l.Rate.PerSecond() < m.Rate.PerSecond()
	}
	return l.BurstOrCount() < m.BurstOrCount()
}

// Limit is the caller's rate limit: the tightest rate a rule of r names
// (rules without one do not widen it: a configured limit is never
// widened); the zero Limit when none does.
func (r Rights) Limit() Limit {
	var out Limit
	for _, e := range r {
		if l := e.Limit(); l.tighter(out) {
			out = l
		}
	}
	return out
}

// Limit is the rule's rate limit (Rate and Burst).
func (e Rule) Limit() Limit { return Limit{Rate: e.Rate, Burst: e.Burst} }

// coversLimit returns an *Excess when q's limit is looser than r's: a
// caller with a rate mints no token without one, nor with a higher one.
func (r Rights) coversLimit(q Rule) error {
	have, want := r.Limit(), q.Limit()
	if have.IsZero() || !have.tighter(want) {
		return nil
	}
	v := want.String()
	if want.IsZero() {
		v = "(none)"
	}
	return &Excess{Field: "rate", Value: v}
}

// CheckLimits returns an error naming the first rule whose burst is
// negative or comes without a rate.
func (r Rights) CheckLimits() error {
	for _, e := range r {
		switch {
		case e.Burst < 0:
			return fmt.Errorf("burst %d is negative: want a count of calls, or 0 for the rate's count", e.Burst)
		case e.Burst > 0 && e.Rate.IsZero():
			return fmt.Errorf("burst %d without a rate: give a rate too, %s", e.Burst, RateForm)
		}
	}
	return nil
}
