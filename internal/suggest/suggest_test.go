package suggest

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"command", "args", "env", "scope", "filesystem", "echo"}
	for _, tc := range []struct{ in, want string }{
		{"comand", "command"}, // one deletion
		{"Scope", "scope"},    // case is ignored
		{"filesytem", "filesystem"},
		{"ehco", "echo"}, // a transposition is one edit
		{"ekko", ""},     // two edits: too many for a four-letter name
		{"zzzzzz", ""},   // nothing close
		{"", ""},         // three edits from the nearest
	} {
		if got := Closest(tc.in, names); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if d := Distance("kitten", "sitting"); d != 3 {
		t.Errorf("Distance(kitten, sitting) = %d, want 3", d)
	}
	if d := Distance("ab", "ba"); d != 1 {
		t.Errorf("Distance(ab, ba) = %d, want 1 (a transposition)", d)
	}
	if d := Distance("zürich", "zurich"); d != 1 {
		t.Errorf("Distance counts runes: %d, want 1", d)
	}
}
