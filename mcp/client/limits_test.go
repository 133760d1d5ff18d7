package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"encoding/json"
)

// heapAfterGC returns the live heap after a full collection.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// An answer over the limit fails exactly the call it answers, at once, as
// the line crosses the limit. Its newline had not come: nothing says where
// the next message starts, so the session ends, and a bystander in flight
// on it fails saying why. Just under the limit passes.
func TestFaultOversizedLine(t *testing.T) {
	const limit = 1 << 20
	_, s := connectChild(t, Options{MaxMessageBytes: limit})
	var wg sync.WaitGroup
	var bystanderErr error
	started := make(chan struct{})
	wg.Go(func() {
		close(started)
		_, bystanderErr = s.CallTool(t.Context(), "sleep", json.RawMessage(`{"ms":60000}`), nil)
	})
	<-started
	_, err := s.CallTool(t.Context(), "big", json.RawMessage(fmt.Sprintf(`{"bytes":%d}`, 3*limit)), nil)
	var tl *TooLargeError
	if !errors.Is(err, ErrMessageTooLarge) || !errors.As(err, &tl) || tl.Limit != limit || !tl.Unended {
		t.Fatalf("big over the limit: %v, want an Unended *TooLargeError with limit %d", err, limit)
	}
	if !strings.Contains(err.Error(), fmt.Sprint(limit)) {
		t.Errorf("error %q does not name the limit", err)
	}
	select {
	case <-s.Done():
	default:
		t.Fatal("the session goes on after a line over the limit that had not ended")
	}
	wg.Wait()
	if !errors.Is(bystanderErr, ErrClosed) && !errors.Is(bystanderErr, ErrMessageTooLarge) {
		t.Errorf("bystander sleep: %v, want the session closed by the oversized answer", bystanderErr)
	}
	// Just under the limit still passes (the stateless framing, with the
	// serverInfo _meta, takes about 200 bytes).
	_, s = connectChild(t, Options{MaxMessageBytes: limit})
	res, err := s.CallTool(t.Context(), "big", json.RawMessage(fmt.Sprintf(`{"bytes":%d}`, limit-400)), nil)
	if err != nil || len(toolText(t, res)) != limit-400 {
		t.Errorf("big under the limit: %d bytes, %v", len(res), err)
	}
}

// A 100 MB line is never held whole: with the id first (go-sdk order) the
// call fails at once and the session ends, nothing more read; with the id
// last (TypeScript SDK order) the rest is skipped to the newline, at most
// the limit buffered, and the session resynchronises there. Memory is
// given back.
func TestOversizedLineMemory(t *testing.T) {
	const limit = 8 << 20
	const lineBytes = 100 << 20
	for _, order := range []string{"id first", "id last"} {
		t.Run(order, func(t *testing.T) {
			p := newPeer(t)
			// The rest of the line must come within the grace; through
			// an io.Pipe under the race detector on a loaded machine it
			// may take longer (TestOversizedLineUnended cuts it short).
			p.tr.(*stdio).skipGrace = 10 * time.Minute
			s := p.connect(Options{MaxMessageBytes: limit}, "2025-06-18")
			before := heapAfterGC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			allocBefore := ms.TotalAlloc

			call := goCall(t.Context(), s, "tools/call", `{"name":"big"}`, nil)
			id := p.recvMsg()["id"]
			prefix := fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"content":[{"type":"text","text":"`, id)
			suffix := `"}]}}`
			if order == "id last" {
				prefix = `{"result":{"content":[{"type":"text","text":"`
				suffix = fmt.Sprintf(`"}]},"jsonrpc":"2.0","id":%v}`, id)
			}
			chunk := []byte(strings.Repeat("a", 1<<20))
			written := make(chan struct{})
			go func() {
				defer close(written)
				io.WriteString(p.out, prefix)
				for range lineBytes >> 20 {
					if _, err := p.out.Write(chunk); err != nil {
						return
					}
				}
				io.WriteString(p.out, suffix+"\n")
			}()
			r := <-call
			if !errors.Is(r.err, ErrMessageTooLarge) {
				t.Fatalf("call answered with a 100 MB line: %v, want ErrMessageTooLarge", r.err)
			}
			<-written
			if order == "id first" {
				select {
				case <-s.Done():
				default:
					t.Fatal("the session goes on after a line over the limit that had not ended")
				}
				return
			}
			// The newline was read: the session resynchronises there.
			next := goCall(t.Context(), s, "ping", "", nil)
			pid := p.recvMsg()["id"]
			p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{}}`, pid))
			if r := <-next; r.err != nil {
				t.Fatalf("ping after the oversized line: %v", r.err)
			}
			runtime.ReadMemStats(&ms)
			allocated := ms.TotalAlloc - allocBefore
			after := heapAfterGC()
			t.Logf("%s: 100 MB line, limit %d MiB: allocated %.1f MiB while reading, live heap %.1f MiB before, %.1f MiB after",
				order, limit>>20, float64(allocated)/(1<<20), float64(before)/(1<<20), float64(after)/(1<<20))
			if allocated > 2*limit+(4<<20) {
				t.Errorf("allocated %d bytes reading a %d-byte line with a limit of %d", allocated, lineBytes, limit)
			}
			if after > before+(4<<20) {
				t.Errorf("live heap grew from %d to %d bytes", before, after)
			}
		})
	}
}

// A line that crosses the limit and does not end — a child writing bytes
// slowly with no newline, then going silent — fails every call on the
// session at once, naming the limit, and ends it: the calls return while
// the child is blocked just past the limit, and the transport has read no
// more than the limit and one write of the child's. When the line cannot
// be a message (no JSON object) that is at the crossing; when its id could
// still be at its end (the TypeScript SDK's order), after the skip's grace.
func TestOversizedLineUnended(t *testing.T) {
	const limit = 1 << 20
	const chunk = 4 << 10
	for _, tc := range []struct{ name, prefix string }{
		{"not a message", ""},
		{"id may be last", `{"result":{"content":[{"type":"text","text":"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr, pw := io.Pipe() // peer → client
			pr, cw := io.Pipe() // client → peer
			read := &countingReader{r: cr}
			p := &peer{t: t, in: bufio.NewReaderSize(pr, 1<<20), out: pw, tr: NewStdio(read, cw)}
			t.Cleanup(func() { pw.Close(); pr.Close() })
			p.tr.(*stdio).skipGrace = 50 * time.Millisecond
			s := p.connect(Options{MaxMessageBytes: limit}, "2025-06-18")
			call := goCall(t.Context(), s, "tools/call", `{"name":"flood"}`, nil)
			p.recv()
			bystander := goCall(t.Context(), s, "tools/call", `{"name":"sleep"}`, nil)
			p.recv()

			// The child writes 4 KiB at a time until it is past the
			// limit, then blocks, its line never ended, until the test
			// is over.
			release := make(chan struct{})
			defer close(release)
			before := read.n.Load() // initialize's answer
			go func() {
				written, _ := io.WriteString(p.out, tc.prefix)
				for written <= limit {
					n, err := p.out.Write([]byte(strings.Repeat("a", chunk)))
					written += n
					if err != nil {
						return
					}
				}
				<-release
			}()
			r := <-call
			var tl *TooLargeError
			if !errors.As(r.err, &tl) || tl.Limit != limit || !tl.Unended || !strings.Contains(r.err.Error(), fmt.Sprint(limit)) {
				t.Fatalf("call answered by an unended line: %v, want an Unended *TooLargeError naming the limit %d", r.err, limit)
			}
			if n := read.n.Load() - before; n <= limit || n > limit+chunk+int64(len(tc.prefix)) {
				t.Errorf("the transport had read %d bytes when the call failed; want just past the limit of %d", n, limit)
			}
			if b := <-bystander; !errors.Is(b.err, ErrMessageTooLarge) || !errors.Is(b.err, ErrClosed) {
				t.Errorf("bystander: %v, want the session closed by the oversized line", b.err)
			}
			select {
			case <-s.Done():
			default:
				t.Fatal("the session goes on after a line over the limit that had not ended")
			}
		})
	}
}

// countingReader counts the bytes read through it; Close closes r.
type countingReader struct {
	r *io.PipeReader
	n atomic.Int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingReader) Close() error { return c.r.Close() }

// An oversized message with no id to tell whose it is ends the session:
// some call would otherwise wait forever.
func TestOversizedLineWithoutID(t *testing.T) {
	p := newPeer(t)
	s := p.connect(Options{MaxMessageBytes: 1024}, "2025-06-18")
	call := goCall(t.Context(), s, "tools/call", `{"name":"big"}`, nil)
	p.recv()
	p.send(`{"jsonrpc":"2.0","result":{"x":"` + strings.Repeat("a", 4096) + `"}}`)
	if r := <-call; !errors.Is(r.err, ErrMessageTooLarge) || !errors.Is(r.err, ErrClosed) {
		t.Errorf("call = %v, want the session closed by the oversized message", r.err)
	}
}

// An oversized notification is dropped; the session goes on.
func TestOversizedNotification(t *testing.T) {
	p := newPeer(t)
	s := p.connect(Options{MaxMessageBytes: 1024}, "2025-06-18")
	p.send(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + strings.Repeat("a", 4096) + `"}}`)
	call := goCall(t.Context(), s, "ping", "", nil)
	id := p.recvMsg()["id"]
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{}}`, id))
	if r := <-call; r.err != nil {
		t.Errorf("ping after an oversized notification: %v", r.err)
	}
}

// Over streamable HTTP an oversized JSON body or SSE event fails its call;
// the session goes on.
func TestHTTPOversizedAnswer(t *testing.T) {
	const limit = 4096
	big := strings.Repeat("b", 2*limit)
	for _, mode := range []string{"json", "sse", "sse id last", "sse lines"} {
		t.Run(mode, func(t *testing.T) {
			var calls atomic.Int32
			ts := scriptedHTTP(t, func(w http.ResponseWriter, r *http.Request, id string) {
				if calls.Add(1) > 2 {
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"small":true}}`, id)
					return
				}
				switch mode {
				case "json":
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"x":"%s"}}`, id, big)
				case "sse":
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"x\":\"%s\"}}\n\n", id, big)
				case "sse id last":
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprintf(w, "data: {\"result\":{\"x\":\"%s\"},\"jsonrpc\":\"2.0\",\"id\":%s}\n\n", big, id)
				case "sse lines": // many data lines, each under the limit
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"x\":\n", id)
					for range 4 {
						fmt.Fprintf(w, "data: \"%s\",\n", big[:limit/2])
					}
					fmt.Fprint(w, "data: 1}}\n\n")
				}
			}, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusMethodNotAllowed) })
			s, err := Connect(t.Context(), NewHTTP(ts.URL, nil, nil), Options{MaxMessageBytes: limit})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for range 2 {
				if _, err := s.CallTool(t.Context(), "big", nil, nil); !errors.Is(err, ErrMessageTooLarge) {
					t.Fatalf("oversized answer over http (%s): %v, want ErrMessageTooLarge", mode, err)
				}
			}
			if res, err := s.CallTool(t.Context(), "small", nil, nil); err != nil || string(res) != `{"small":true}` {
				t.Fatalf("call after two oversized answers: %s, %v", res, err)
			}
		})
	}
}

// A notification answered 200 with a JSON body (instead of 202 with none)
// is accepted, as the official SDK clients do; the session stays usable.
func TestHTTPNotificationAnsweredWithBody(t *testing.T) {
	var notes int
	var mu sync.Mutex
	ts := httptestServer(t, func(w http.ResponseWriter, r *http.Request, msg rpcMsg) {
		switch {
		case msg.ID == nil:
			mu.Lock()
			notes++
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"ok":true}`)
		case msg.Method == "initialize":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"lenient","version":"1"}}}`, msg.ID)
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"ok":1}}`, msg.ID)
		}
	})
	s, err := Connect(t.Context(), NewHTTP(ts.URL, nil, nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A cancelled call sends notifications/cancelled too.
	for range 3 {
		res, err := s.CallTool(t.Context(), "x", nil, nil)
		if err != nil || string(res) != `{"ok":1}` {
			t.Fatalf("call after a notification answered 200 with a body: %s, %v", res, err)
		}
	}
	select {
	case <-s.Done():
		t.Fatalf("session ended: %v", s.Err())
	default:
	}
	mu.Lock()
	defer mu.Unlock()
	if notes == 0 {
		t.Error("the server saw no notification")
	}
}

// rpcMsg is the part of a JSON-RPC message a scripted server reads.
type rpcMsg struct {
	ID     json.RawMessage
	Method string
}

// httptestServer is a hand-written streamable HTTP endpoint: handle
// answers each POST; GET is 405 (no standalone stream), DELETE 200.
func httptestServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, msg rpcMsg)) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case http.MethodPost:
			var msg rpcMsg
			json.NewDecoder(r.Body).Decode(&msg)
			handle(w, r, msg)
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

// The server closes the POST's stream after its priming event id; the
// client resumes with GET and Last-Event-ID, and the answer arrives there
// on a stream the server then leaves open. The call completes as soon as
// the answer arrives. A hand-written server, because the go-sdk handler
// decides itself when to close a POST's stream: this sequence cannot be
// produced with it on demand.
func TestHTTPAnswerOnResumedStreamLeftOpen(t *testing.T) {
	var mu sync.Mutex
	pending := map[string]string{} // event id -> request id
	var seq int
	ts := scriptedHTTP(t, func(w http.ResponseWriter, r *http.Request, id string) {
		mu.Lock()
		seq++
		ev := fmt.Sprintf("e%d", seq)
		pending[ev] = id
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "id: %s\nretry: 1\ndata:\n\n", ev) // then the stream ends
	}, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		id, ok := pending[r.Header.Get("Last-Event-ID")]
		mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "id: r%s\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"resumed\":%s}}\n\n", id, id, id)
		w.(http.Flusher).Flush()
		<-r.Context().Done() // left open
	})
	s, err := Connect(t.Context(), NewHTTP(ts.URL, nil, nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 3 {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		res, err := s.CallTool(ctx, "x", nil, nil)
		cancel()
		if err != nil || !strings.HasPrefix(string(res), `{"resumed":`) {
			t.Fatalf("CallTool = %s, %v", res, err)
		}
	}
}

// The answer arrives on the standalone GET stream while the POST's own
// stream stays open with nothing on it: the call completes all the same.
func TestHTTPAnswerOnOtherStream(t *testing.T) {
	answers := make(chan string, 4)
	ts := scriptedHTTP(t, func(w http.ResponseWriter, r *http.Request, id string) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, ": open\n\n")
		w.(http.Flusher).Flush()
		answers <- id
		<-r.Context().Done() // left open, never answered here
	}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		for {
			select {
			case id := <-answers:
				fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"elsewhere\":true}}\n\n", id)
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	})
	s, err := Connect(t.Context(), NewHTTP(ts.URL, nil, nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 2 {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		res, err := s.CallTool(ctx, "x", nil, nil)
		cancel()
		if err != nil || string(res) != `{"elsewhere":true}` {
			t.Fatalf("CallTool = %s, %v", res, err)
		}
	}
}
