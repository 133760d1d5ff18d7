package mcp

import (
	"regexp"
	"strings"
	"testing"
)

var clientRule = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestAggregateName(t *testing.T) {
	long := strings.Repeat("x", 70)
	cases := []struct{ server, name, want string }{
		{"fs", "read_file", "fs__read_file"},
		{"github", "get-issue", "github__get-issue"},
	}
	for _, c := range cases {
		if got := AggregateName(c.server, c.name); got != c.want {
			t.Errorf("AggregateName(%q, %q) = %q, want %q", c.server, c.name, got, c.want)
		}
	}
	seen := map[string]string{}
	for _, name := range []string{"a.b", "a/b", "a b", "ä", long, long + "y", "a_b"} {
		got := AggregateName("srv", name)
		if !clientRule.MatchString(got) {
			t.Errorf("AggregateName(srv, %q) = %q: not a name clients accept", name, got)
		}
		if !strings.HasPrefix(got, "srv__") {
			t.Errorf("AggregateName(srv, %q) = %q lost its server", name, got)
		}
		if prev, ok := seen[got]; ok {
			t.Errorf("%q and %q both become %q", prev, name, got)
		}
		seen[got] = name
	}
}

func TestServerOf(t *testing.T) {
	servers := []string{"a", "a-b", "fs"}
	for name, want := range map[string]string{"a__x": "a", "a-b__x": "a-b", "fs__read": "fs", "b__x": "", "a_x": ""} {
		if got := serverOf(name, servers); got != want {
			t.Errorf("serverOf(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestObjectKeepsMembers(t *testing.T) {
	in := `{"name":"t","x-vendor":{"a":[1,2]},"description":"d","inputSchema":{"type":"object"}}`
	o, err := parseObject([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	o = o.setString("name", "s__t")
	want := `{"name":"s__t","x-vendor":{"a":[1,2]},"description":"d","inputSchema":{"type":"object"}}`
	if got := string(o.bytes()); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

func TestParseEventID(t *testing.T) {
	st := newStream("12")
	sid, seq, ok := parseEventID(st.eventID(7))
	if !ok || sid != "12" || seq != 7 {
		t.Errorf("parseEventID(%q) = %q, %d, %v", st.eventID(7), sid, seq, ok)
	}
	if _, _, ok := parseEventID("nonsense"); ok {
		t.Error("parsed an id without a seq")
	}
}
