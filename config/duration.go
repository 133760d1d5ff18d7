package config

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration that reads and writes Go duration strings
// ("90s", "5m"). Bare JSON numbers are rejected: they are ambiguous.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d as Go does ("1m30s").
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a Go duration string ("90s"). Numbers are rejected.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if string(b) == "null" {
		return nil
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"90s\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q: want a Go duration such as \"90s\" or \"5m\"", s)
	}
	*d = Duration(v)
	return nil
}

// Period is how often something runs: a Go duration string, or "off" (also
// "0s") for never. Off is negative; the zero value means "the default".
type Period time.Duration

// PeriodOff is a Period that is off.
const PeriodOff Period = -1

// D returns p as a time.Duration: negative when off.
func (p Period) D() time.Duration { return time.Duration(p) }

// String formats p as Go does, or "off".
func (p Period) String() string {
	if p < 0 {
		return "off"
	}
	return time.Duration(p).String()
}

// MarshalJSON writes p as a Go duration string, or "off".
func (p Period) MarshalJSON() ([]byte, error) { return json.Marshal(p.String()) }

// UnmarshalJSON reads a Go duration string, or "off"; "0s" is off too.
func (p *Period) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf(`want a duration string such as "10s", or "off", got %s`, b)
	}
	if s == "off" {
		*p = PeriodOff
		return nil
	}
	v, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return fmt.Errorf(`invalid period %q: want a Go duration such as "10s", or "off"`, s)
	case v < 0:
		return fmt.Errorf(`negative period %q: want a positive duration such as "10s", or "off"`, s)
	case v == 0:
		*p = PeriodOff
	default:
		*p = Period(v)
	}
	return nil
}
