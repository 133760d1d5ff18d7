package config

import (
	"strings"
	"testing"
)

// TestServerNamesMustNotClash: two servers whose tools' /mcp prefixes
// overlap, or whose names clean to one TypeScript namespace, are refused,
// naming both.
func TestServerNamesMustNotClash(t *testing.T) {
	for _, tc := range []struct {
		names []string
		bad   string // a substring of the error; "" = loads
	}{
		{[]string{"a", "ab", "a-b", "ac"}, ""},
		{[]string{"a-b", "a_b"}, `servers "a-b" and "a_b" would share the TypeScript client's namespace aB`},
		{[]string{"x", "get-item", "get_item"}, `servers "get-item" and "get_item"`},
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
