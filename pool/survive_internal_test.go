package pool

import (
	"io"
	"strings"
	"testing"
)

// TestResyncDropsAHalfReadLine: a survivor's stdout goes on at the next
// line when its first is the end of one the dead daemon had read the
// start of, and keeps a first line that is a whole message.
func TestResyncDropsAHalfReadLine(t *testing.T) {
	next := `{"jsonrpc":"2.0","id":5,"result":{}}` + "\n"
	for _, tc := range []struct{ name, in, want string }{
		{"the end of an object", `ult":{"a":{"b":1}}}` + "\n" + next, next},
		{"the end of a string", `in the text"}` + "\n" + next, next},
		{"a nested object's end", `{"b":1}}` + "\n" + next, next},
		{"a whole message", next + next, next + next},
		{"a long end", strings.Repeat("x", 200<<10) + "}\n" + next, next},
		{"nothing yet", "", ""},
	} {
		b, err := io.ReadAll(newResync(io.NopCloser(strings.NewReader(tc.in))))
		if err != nil || string(b) != tc.want {
			t.Errorf("%s: read %.80q, %v; want %q", tc.name, b, err, tc.want)
		}
	}
}
