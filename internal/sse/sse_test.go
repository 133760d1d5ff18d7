package sse_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"

	"mcpx.dev/mcpx/internal/sse"
)

// readAll decodes every event of stream.
func readAll(t testing.TB, r io.Reader, bufSize, maxLine int) ([]sse.Event, error) {
	t.Helper()
	d := sse.NewDecoder(bufio.NewReaderSize(r, bufSize), maxLine)
	var out []sse.Event
	for {
		ev, err := d.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestDecoder(t *testing.T) {
	stream := ": keep-alive\r\n" +
		"id: 1\r\nretry: 250\r\ndata:\r\n\r\n" + // a priming event: an id and empty data
		"\n\n" + // blank lines alone dispatch nothing
		"event: message\ndata: {\"a\":\ndata: 1}\n\n" +
		"event: other\ndata:x\nunknown: field\nretry: soon\n\n" +
		"event: name-only\n\n" + // no data, no id: not dispatched
		"data\n\n" + // a field name alone has an empty value
		"data: " + strings.Repeat("y", 200000) + "\n\n" +
		"data: {\"unterminated\":true}"
	for _, bufSize := range []int{16, 4096} {
		t.Run(fmt.Sprint("buffer=", bufSize), func(t *testing.T) {
			got, err := readAll(t, iotest.OneByteReader(strings.NewReader(stream)), bufSize, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if len(got[i].Data) > 100 {
					got[i].Data = []byte(fmt.Sprint(len(got[i].Data)))
				}
			}
			want := []sse.Event{
				{ID: "1", Retry: 250 * time.Millisecond},
				{Event: "message", Data: []byte("{\"a\":\n1}")},
				{Event: "other", Data: []byte("x")},
				{},
				{Data: []byte("200000")},
			}
			if d := cmp.Diff(want, got, cmp.Comparer(bytes.Equal)); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
		})
	}
}

func TestDecoderLineLimit(t *testing.T) {
	stream := "data: " + strings.Repeat("y", 100) + "\n\n"
	if _, err := readAll(t, strings.NewReader(stream), 16, 106); err != nil {
		t.Errorf("a line at the limit: %v", err)
	}
	for _, bufSize := range []int{16, 4096} {
		if _, err := readAll(t, strings.NewReader(stream), bufSize, 105); !errors.Is(err, sse.ErrTooLarge) {
			t.Errorf("buffer %d: a line over the limit: %v, want ErrTooLarge", bufSize, err)
		}
	}
}

func TestDecoderReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("event: a\ndata: 1\n\nevent: b\n"), iotest.ErrReader(boom))
	got, err := readAll(t, r, 4096, 1<<20)
	if len(got) != 1 || got[0].Event != "a" || !errors.Is(err, boom) {
		t.Errorf("events %+v, error %v; want event a, then boom", got, err)
	}
}

func TestAppend(t *testing.T) {
	var b []byte
	b = sse.AppendEvent(b, "progress", []byte(`{"progress":1}`))
	b = sse.AppendComment(b, "keep-alive")
	b = sse.AppendEvent(b, "result", []byte("{\r\n  \"a\": 1\n}\n"))
	b = sse.AppendEvent(b, "", nil)
	want := "event: progress\ndata: {\"progress\":1}\n\n" +
		": keep-alive\n\n" +
		"event: result\ndata: {\ndata:   \"a\": 1\ndata: }\n\n" +
		"data: \n\n"
	if string(b) != want {
		t.Errorf("got %q\nwant %q", b, want)
	}
}

// normalized is data as a reader gets it back from AppendEvent.
func normalized(data []byte) []byte {
	return bytes.ReplaceAll(bytes.TrimRight(data, "\r\n"), []byte("\r\n"), []byte("\n"))
}

// Whatever the writer sends, the reader returns: the name, and the data with
// line ends normalised.
func FuzzRoundTrip(f *testing.F) {
	f.Add("progress", []byte(`{"progress":1,"total":3}`), "keep-alive")
	f.Add("result", []byte("{\r\n\"a\":\n1}\n\n"), "")
	f.Add("", []byte(""), "x")
	f.Fuzz(func(t *testing.T, name string, data []byte, comment string) {
		if strings.ContainsAny(name+comment, "\r\n") || bytes.Contains(bytes.ReplaceAll(data, []byte("\r\n"), nil), []byte("\r")) {
			t.Skip() // names and comments are one line; a lone CR is not a line end to this codec
		}
		var b []byte
		b = sse.AppendComment(b, comment)
		b = sse.AppendEvent(b, name, data)
		got, err := readAll(t, bytes.NewReader(b), 64, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Event != name || !bytes.Equal(got[0].Data, normalized(data)) {
			t.Fatalf("stream %q decoded to %+v; want %q with data %q", b, got, name, normalized(data))
		}
	})
}

// The reader never panics, never returns a line over its limit, and keeps
// going to the end of any input.
func FuzzDecoder(f *testing.F) {
	f.Add([]byte("event: a\ndata: 1\n\n: c\n\nid: 7\nretry: 10\n\n"))
	f.Add([]byte("data: {\r\ndata: }\r\n\r\ndata"))
	f.Add([]byte("\n\n\r\n:\nevent\ndata:\n\n"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		const maxLine = 64
		got, err := readAll(t, bytes.NewReader(stream), 16, maxLine)
		if err != nil && !errors.Is(err, sse.ErrTooLarge) {
			t.Fatalf("error %v, want nil or ErrTooLarge", err)
		}
		for _, ev := range got {
			if strings.ContainsAny(ev.Event+ev.ID, "\n") || len(ev.Event) > maxLine || len(ev.ID) > maxLine {
				t.Errorf("event %+v: a field spans lines or exceeds the line limit", ev)
			}
		}
	})
}

// BenchmarkDecoder reads the events of a streamable HTTP answer as
// go-sdk's server writes them: an id, an event type, one data line.
func BenchmarkDecoder(b *testing.B) {
	ev := "event: message\nid: 1_0\ndata: " + `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello"}]}}` + "\n\n"
	stream := strings.Repeat(ev, 100)
	r := strings.NewReader(stream)
	br := bufio.NewReaderSize(r, 16<<10)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(stream)
		br.Reset(r)
		d := sse.NewDecoder(br, 1<<20)
		for {
			if _, err := d.Next(); err != nil {
				break
			}
		}
	}
}

// An event over the limit, in one line or in many data lines that add up,
// is skipped and reported with its id and the ends of its data; decoding
// goes on with the next event.
func TestDecoderSkipsOversizedEvent(t *testing.T) {
	long := strings.Repeat("x", 5000)
	stream := "id: 1\ndata: {\"id\":7," + long + "END\n\n" +
		"id: 2\ndata: " + long[:60] + "\ndata: " + long[:60] + "TAIL\n\n" +
		"id: 3\ndata: small\n\n"
	d := sse.NewDecoder(bufio.NewReaderSize(strings.NewReader(stream), 16), 100)
	for _, want := range []struct{ id, head, tail string }{{"1", `{"id":7,`, "END"}, {"2", "xxx", "TAIL"}} {
		ev, err := d.Next()
		var big *sse.TooLargeError
		if !errors.As(err, &big) || !errors.Is(err, sse.ErrTooLarge) {
			t.Fatalf("event %s: %+v, %v; want a *TooLargeError", want.id, ev, err)
		}
		if ev.ID != want.id || big.ID != want.id || !strings.HasPrefix(string(big.Head), want.head) || !strings.HasSuffix(string(big.Tail), want.tail) || len(big.Head) > sse.HeadBytes || len(big.Tail) > sse.TailBytes {
			t.Errorf("event %s: id %q/%q head %.20q tail …%.20q", want.id, ev.ID, big.ID, big.Head, big.Tail[max(0, len(big.Tail)-20):])
		}
	}
	ev, err := d.Next()
	if err != nil || ev.ID != "3" || string(ev.Data) != "small" {
		t.Errorf("the event after: %+v, %v", ev, err)
	}
}
