package config_test

import (
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/config"
)

// TestRateFields: a server's rate, burst and maxConcurrent and the owner's
// rate are read; a bad one is a problem naming the server and the field
// and showing the accepted form.
func TestRateFields(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"servers": {"demo": {"command": "x", "rate": "100/m", "burst": 5, "maxConcurrent": 4}},
		"limits": {"ownerRate": "10/s"}}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Servers["demo"]
	if want := (rights.Rate{Count: 100, Per: time.Minute}); s.Rate != want || s.Burst != 5 || s.MaxConcurrent != 4 {
		t.Errorf("server limits = %v, %d, %d; want %v, 5, 4", s.Rate, s.Burst, s.MaxConcurrent, want)
	}
	if got := cfg.Limits.OwnerRate.String(); got != "10/s" {
		t.Errorf("ownerRate = %q, want 10/s", got)
	}

	for _, tc := range []struct{ doc, want []string }{
		{[]string{`{"servers": {"demo": {"command": "x", "rate": "100/x"}}}`}, []string{`demo`, `rate`, `invalid rate "100/x"`, `"100/m"`}},
		{[]string{`{"servers": {"demo": {"command": "x", "rate": 100}}}`}, []string{`demo`, `rate`, `"<count>/m"`}},
		{[]string{`{"servers": {"demo": {"command": "x", "rate": "0/m"}}}`}, []string{`demo`, `rate`, `want`}},
		{[]string{`{"servers": {"demo": {"command": "x", "burst": 3}}}`}, []string{`demo`, `burst 3 without rate`}},
		{[]string{`{"servers": {"demo": {"command": "x", "maxConcurrent": -1}}}`}, []string{`demo`, `maxConcurrent is -1`}},
		{[]string{`{"servers": {}, "limits": {"ownerRate": "fast"}}`}, []string{`limits.ownerRate`, `invalid rate "fast"`}},
	} {
		_, err := config.Parse([]byte(tc.doc[0]), "test")
		if err == nil {
			t.Errorf("%s: no error", tc.doc[0])
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tc.doc[0], err, w)
			}
		}
	}
}
