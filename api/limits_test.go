package api

import (
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestDeeperThan(t *testing.T) {
	nest := func(n int) string { return strings.Repeat(`{"a":[`, n) + "1" + strings.Repeat("]}", n) }
	for _, tc := range []struct {
		name string
		doc  string
		max  int
		want bool
	}{
		{"flat", `{"a":1}`, 1, false},
		{"at the limit", `{"a":[1]}`, 2, false},
		{"over the limit", `{"a":[1]}`, 1, true},
		{"brackets in strings do not count", `{"a":"[[[[{{{{"}`, 1, false},
		{"escaped quote stays in the string", `{"a":"\"[[[["}`, 1, false},
		{"escaped backslash ends the string", `{"a":"\\","b":[[1]]}`, 2, true},
		{"deep", nest(500), 64, true},
		{"deep within a big limit", nest(500), 1000, false},
		{"unterminated string", `{"a":"[[[[`, 1, false},
		{"closers first do not underflow into a pass", `]]]]{{{{`, 3, true},
	} {
		if got := deeperThan([]byte(tc.doc), tc.max); got != tc.want {
			t.Errorf("%s: deeperThan(%.40q, %d) = %v, want %v", tc.name, tc.doc, tc.max, got, tc.want)
		}
	}
}

// typicalArgs is a tool call's arguments as agents send them: a few fields,
// a path, a short text.
const typicalArgs = `{"path":"/home/user/src/project/internal/server/handler.go","content":"package server\n\nfunc Handle() error {\n\treturn nil\n}\n","options":{"create":true,"mode":"0644","tags":["a","b"]}}`

// largeArgs is a 1 MiB argument body: an array of objects with text.
// Made when a benchmark asks, not at init: every start of this test
// binary, a demo child's too, paid for it (~70 ms of CPU under -race).
var largeArgs = sync.OnceValue(func() []byte {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := 0; b.Len() < 1<<20; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"id":12345,"name":"item with \"quotes\" and [brackets]","text":"` + strings.Repeat("lorem ipsum dolor sit amet ", 8) + `","nested":{"list":[1,2,3]}}`)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
})

func BenchmarkDeeperThan(b *testing.B) {
	for _, bc := range []struct {
		name string
		doc  []byte
	}{{"typical", []byte(typicalArgs)}, {"1MiB", largeArgs()}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.doc)))
			b.ReportAllocs()
			for b.Loop() {
				if deeperThan(bc.doc, 64) {
					b.Fatal("too deep")
				}
			}
		})
	}
}

// The progress queue keeps the newest maxQueuedProgress notes, however many
// arrive before the handler takes them.
func TestProgressQueueIsBounded(t *testing.T) {
	q := newProgressQueue()
	for i := range 10 * maxQueuedProgress {
		q.push([]byte(strconv.Itoa(i)))
	}
	items := q.take()
	if len(items) != maxQueuedProgress || string(items[len(items)-1]) != strconv.Itoa(10*maxQueuedProgress-1) {
		t.Fatalf("%d items, last %s; want the newest %d", len(items), items[len(items)-1], maxQueuedProgress)
	}
	if cap(items) > 2*maxQueuedProgress+1 {
		t.Errorf("backing array holds %d items", cap(items))
	}
	if n := q.close(); n != 9*maxQueuedProgress {
		t.Errorf("dropped %d", n)
	}
}
