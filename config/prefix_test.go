package config

import (
	"strings"
	"testing"
)

func TestServerPrefixesMustNotOverlap(t *testing.T) {
	for _, tc := range []struct {
		names []string
		bad   string // a substring of the error; "" = loads
	}{
		{[]string{"a", "ab", "a-b", "a_b"}, ""},
		{[]string{"a", "a__b"}, `servers "a" and "a__b"`},
		{[]string{"a", "a_"}, `servers "a" and "a_"`},
		{[]string{strings.Repeat("s", 41)}, "41 characters long"},
		{[]string{strings.Repeat("s", 40)}, ""},
	} {
		var b strings.Builder
		b.WriteString(`{"servers":{`)
		for i, n := range tc.names {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`"` + n + `":{"command":"/bin/true"}`)
		}
		b.WriteString("}}")
		_, err := Parse([]byte(b.String()), "t.json")
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%v: %v", tc.names, err)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("%v: error %v, want one naming %s", tc.names, err, tc.bad)
		}
	}
}
