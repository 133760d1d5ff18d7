package placeholder

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRefs(t *testing.T) {
	tests := []struct {
		in   string
		want []Ref
	}{
		{"", nil},
		{"plain ${HOME} ${mcpxHome} $mcpx.root {mcpx.root}", nil},
		{"${mcpx.root}", []Ref{{0, "${mcpx.root}", "root", true}}},
		{"--root=${mcpx.root}/${mcpx.cwd}!", []Ref{{7, "${mcpx.root}", "root", true}, {20, "${mcpx.cwd}", "cwd", true}}},
		{"${mcpx.rot}", []Ref{{0, "${mcpx.rot}", "rot", true}}},
		{"${mcpx}", []Ref{{0, "${mcpx}", "", true}}},
		{"${mcpx.}", []Ref{{0, "${mcpx.}", "", true}}},
		{"${mcpx..x}", []Ref{{0, "${mcpx..x}", ".x", true}}},
		{"a ${mcpx.root", []Ref{{2, "${mcpx.root", "", false}}},
		{"a ${mcpx", []Ref{{2, "${mcpx", "", false}}},
		{"${mcpx.root ${HOME}", []Ref{{0, "${mcpx.root ${HOME}", "root ${HOME", true}}},
		{"${mcpxHome}${mcpx.cwd}", []Ref{{11, "${mcpx.cwd}", "cwd", true}}},
		{"${mcpx.cwd}${mcpx.x", []Ref{{0, "${mcpx.cwd}", "cwd", true}, {11, "${mcpx.x", "", false}}},
	}
	for _, tt := range tests {
		got := slices.Collect(Refs(tt.in))
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Refs(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestKnown(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want bool
	}{
		{"${mcpx.root}", true}, {"${mcpx.cwd}", true}, {"${mcpx.rot}", false},
		{"${mcpx}", false}, {"${mcpx.root", false}, {"${mcpx.ROOT}", false},
		{"${mcpx.instance}", true}, {"${mcpx.index}", true}, {"${mcpx.key}", true}, {"${mcpx.tmpdir}", true},
		{"${mcpx.alloc.port}", false},
	} {
		r, ok := first(tt.in)
		if !ok || r.Known() != tt.want {
			t.Errorf("Refs(%q) = %+v, %v; want Known() = %v", tt.in, r, ok, tt.want)
		}
	}
	for _, n := range Names {
		if r, _ := first("${mcpx." + n + "}"); !r.Known() {
			t.Errorf("name %q is listed but not known", n)
		}
		if !strings.Contains(Known, "${mcpx."+n+"}") {
			t.Errorf("Known = %q does not list %q", Known, n)
		}
	}
}

func TestAlloc(t *testing.T) {
	for _, tt := range []struct {
		in, name string
		ok       bool
	}{
		{"${mcpx.alloc.port}", "port", true}, {"${mcpx.alloc.a.b}", "a.b", true},
		{"${mcpx.alloc.}", "", false}, {"${mcpx.alloc}", "", false}, {"${mcpx.alloc.port", "", false},
		{"${mcpx.root}", "", false}, {"${mcpx.allocport}", "", false},
	} {
		r, _ := first(tt.in)
		if name, ok := r.Alloc(); name != tt.name || ok != tt.ok {
			t.Errorf("Refs(%q).Alloc() = %q, %v; want %q, %v", tt.in, name, ok, tt.name, tt.ok)
		}
	}
	for _, tt := range []struct {
		in   string
		want bool
	}{
		{"--port=${mcpx.alloc.port}", true}, {"${mcpx.tmpdir}/profile", true},
		{"${mcpx.root} ${mcpx.index} ${mcpx.key} ${mcpx.instance}", false}, {"${HOME}", false},
	} {
		if got := PerInstance(tt.in); got != tt.want {
			t.Errorf("PerInstance(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func first(s string) (Ref, bool) {
	for r := range Refs(s) {
		return r, true
	}
	return Ref{}, false
}

// isStart reports whether a reference starts at s[i:]: "${mcpx" followed by
// ".", "}" or the end of s.
func isStart(s string, i int) bool {
	rest, ok := strings.CutPrefix(s[i:], open)
	return ok && (rest == "" || rest[0] == '.' || rest[0] == '}')
}

func FuzzRefs(f *testing.F) {
	for _, s := range []string{
		"", "${mcpx.root}", "a${mcpx.cwd}b${HOME}", "${mcpx", "${mcpx}", "${mcpx.}", "${mcpx.x",
		"${mcpxHome}", "${mcpx.${mcpx.root}}", "${mcpx.root}${mcpx.root", "$${mcpx.cwd}}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		last := 0
		var b strings.Builder
		refs := slices.Collect(Refs(s))
		for k, r := range refs {
			if r.Start < last || r.End() > len(s) || s[r.Start:r.End()] != r.Text {
				t.Fatalf("Refs(%q): ref %+v out of place (previous ended at %d)", s, r, last)
			}
			// The text between references holds no reference start.
			for i := last; i < r.Start; i++ {
				if isStart(s, i) {
					t.Fatalf("Refs(%q): missed the reference at %d", s, i)
				}
			}
			if !isStart(s, r.Start) {
				t.Fatalf("Refs(%q): %+v does not start a reference", s, r)
			}
			if r.Closed {
				body := r.Text[len(open) : len(r.Text)-1]
				if !strings.HasSuffix(r.Text, "}") || strings.Contains(body, "}") {
					t.Fatalf("Refs(%q): closed %+v does not end at the first }", s, r)
				}
				if want := strings.TrimPrefix(body, "."); r.Name != want {
					t.Fatalf("Refs(%q): %+v has name %q, want %q", s, r, r.Name, want)
				}
				if r.Known() != (r.Text == "${mcpx."+r.Name+"}" && slices.Contains(Names, r.Name)) {
					t.Fatalf("Refs(%q): %+v: Known() = %v", s, r, r.Known())
				}
			} else {
				if k != len(refs)-1 || r.End() != len(s) || strings.Contains(r.Text, "}") || r.Name != "" || r.Known() {
					t.Fatalf("Refs(%q): unclosed %+v is not the last, name-less run to the end", s, r)
				}
			}
			b.WriteString(s[last:r.Start])
			b.WriteString(r.Text)
			last = r.End()
		}
		for i := last; i < len(s); i++ {
			if isStart(s, i) {
				t.Fatalf("Refs(%q): missed the reference at %d", s, i)
			}
		}
		if b.WriteString(s[last:]); b.String() != s {
			t.Fatalf("Refs(%q) does not cover the string: %q", s, b.String())
		}
	})
}

func ExampleRefs() {
	for r := range Refs("--root=${mcpx.root} --home=${HOME} ${mcpx.rot} ${mcpx.cwd") {
		fmt.Printf("%q name=%q closed=%v known=%v\n", r.Text, r.Name, r.Closed, r.Known())
	}
	// Output:
	// "${mcpx.root}" name="root" closed=true known=true
	// "${mcpx.rot}" name="rot" closed=true known=false
	// "${mcpx.cwd" name="" closed=false known=false
}
