package api_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// countingListener counts the connections Serve has accepted and not yet
// closed, and the most at any one time.
type countingListener struct {
	net.Listener
	open, peak, closed atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := l.open.Add(1)
	for p := l.peak.Load(); n > p && !l.peak.CompareAndSwap(p, n); p = l.peak.Load() {
	}
	return &countedConn{Conn: c, l: l}, nil
}

type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1); c.l.closed.Add(1) })
	return c.Conn.Close()
}

// rawRequest opens a connection and writes head, an HTTP/1.1 request
// without its end: the caller writes the rest, or nothing. Over TCP it adds
// the daemon's bearer token after the request line, so the request gets
// past authentication to the part under test.
func rawRequest(t *testing.T, network, addr, head string) net.Conn {
	t.Helper()
	if network == "tcp" {
		line, rest, _ := strings.Cut(head, "\r\n")
		head = line + "\r\nAuthorization: Bearer " + apitest.Token + "\r\n" + wire.HeaderClient + ": api-test\r\n" + rest
	}
	c, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	return c
}

// stalledCall is a tool call whose chunked body starts and never ends.
const stalledCall = "POST /v1/servers/demo/tools/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"mes\r\n"

// readResponse reads one response from c, bounded by a deadline.
func readResponse(t *testing.T, c net.Conn) (*http.Response, string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// A body that stops arriving is answered 408 and its connection closed.
func TestFaultSlowBody(t *testing.T) {
	proctest.CheckNoLeaks(t)
	// The timeout leaves the steady body below a tenfold margin: a loaded
	// machine stretches its 50 ms pauses, never to half a second.
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": ""}), API: func(o *api.Options) { o.BodyTimeout = 500 * time.Millisecond }})
	for _, c := range []net.Conn{rawRequest(t, "tcp", d.TCPAddr, stalledCall), rawRequest(t, "unix", d.Sock, stalledCall)} {
		resp, body := readResponse(t, c)
		if resp.StatusCode != 408 || !strings.Contains(body, wire.KindBodyTimeout) || !strings.Contains(body, "stopped arriving") || !resp.Close {
			t.Errorf("%s: %d close=%v %s; want a 408 problem and the connection closed", c.LocalAddr().Network(), resp.StatusCode, resp.Close, body)
		}
	}
	// A slow body that keeps arriving is fine.
	c := rawRequest(t, "tcp", d.TCPAddr, "POST /v1/servers/demo/tools/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n")
	for _, part := range []string{`{"mes`, `sage":`, `"slow"}`} {
		time.Sleep(50 * time.Millisecond)
		fmt.Fprintf(c, "%x\r\n%s\r\n", len(part), part)
	}
	io.WriteString(c, "0\r\n\r\n")
	if resp, body := readResponse(t, c); resp.StatusCode != 200 || !strings.Contains(body, "slow") {
		t.Errorf("slow but steady body: %d %s", resp.StatusCode, body)
	}
}

// Many stalled TCP bodies hold at most the TCP cap of the daemon's
// connections; the rest wait in the kernel's backlog, and the owner's unix
// socket keeps answering.
func TestFaultStalledConnections(t *testing.T) {
	const maxConns, stalled = 20, 300
	proctest.CheckNoLeaks(t)
	var counter *countingListener
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": ""}), Serve: func(o *api.ServeOptions) { o.MaxConns = maxConns },
		WrapTCP: func(ln net.Listener) net.Listener { counter = &countingListener{Listener: ln}; return counter }})
	conns := make([]net.Conn, 0, stalled)
	for range stalled {
		conns = append(conns, rawRequest(t, "tcp", d.TCPAddr, stalledCall))
	}
	testenv.WaitFor(t, "the daemon to take up the stalled connections", func() bool { return counter.open.Load() >= maxConns })
	dir := t.TempDir()
	for range 3 {
		if r := d.Unix.Do(t, "GET", "/healthz", ""); r.StatusCode != 200 {
			t.Fatalf("unix healthz: %d %s", r.StatusCode, r.Bytes)
		}
		if res := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"still here"}`, cwdHeader(dir)...).Result(t); res.Text() != "still here" {
			t.Fatalf("unix call: %+v", res)
		}
	}
	t.Logf("%d stalled TCP connections: the daemon held %d at most (cap %d)", stalled, counter.peak.Load(), maxConns)
	if p := counter.peak.Load(); p > maxConns {
		t.Errorf("the daemon accepted %d TCP connections at once; the cap is %d", p, maxConns)
	}
	// Closing them frees the slots: TCP answers again.
	for _, c := range conns {
		c.Close()
	}
	if r := d.TCP.Do(t, "GET", "/healthz", ""); r.StatusCode != 200 {
		t.Errorf("tcp after the stalled clients left: %d", r.StatusCode)
	}
}

// A client that does not read its response is disconnected after the write
// timeout, which releases the response.
func TestFaultNonReadingClient(t *testing.T) {
	proctest.CheckNoLeaks(t)
	var counter *countingListener
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": ""}), Serve: func(o *api.ServeOptions) { o.WriteTimeout = 300 * time.Millisecond },
		WrapTCP: func(ln net.Listener) net.Listener { counter = &countingListener{Listener: ln}; return counter }})
	const body = `{"bytes":8388608}` // 8 MiB: more than the socket buffers hold
	rawRequest(t, "tcp", d.TCPAddr, fmt.Sprintf("POST /v1/servers/demo/tools/big HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
	testenv.WaitFor(t, "the daemon to drop the client that reads nothing", func() bool {
		return counter.closed.Load() == 1
	})
	// The daemon serves on.
	if r := d.TCP.Do(t, "GET", "/healthz", ""); r.StatusCode != 200 {
		t.Errorf("tcp healthz: %d", r.StatusCode)
	}
}

// A child flooding progress to a client that reads nothing for a while
// grows the daemon by a bounded queue, not by every note; the result still
// arrives when the client reads.
func TestFaultProgressFlood(t *testing.T) {
	proctest.CheckNoLeaks(t)
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "global"}`}), Serve: func(o *api.ServeOptions) { o.WriteTimeout = time.Minute }})
	const steps = 50000
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	body := fmt.Sprintf(`{"steps":%d}`, steps)
	c := rawRequest(t, "unix", d.Sock, fmt.Sprintf("POST /v1/servers/demo/tools/progress HTTP/1.1\r\nHost: mcpx\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
	// The call is over once the child has sent its result; the handler
	// still holds what the client has not read.
	testenv.WaitFor(t, "the child to finish the flood", func() bool {
		in := d.Broker.Instances()
		return len(in) == 1 && in[0].Calls == 1 && in[0].InFlight == 0
	})
	var during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&during)
	t.Logf("%d progress notes to a client reading nothing: heap in use %d KiB before, %d KiB after the flood",
		steps, before.HeapInuse>>10, during.HeapInuse>>10)

	resp, events := readResponse(t, c)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var progress int
	var result string
	apitest.ReadEvents(t, strings.NewReader(events), func(ev apitest.Event) {
		switch ev.Name {
		case "progress":
			progress++
		case "result":
			result = ev.Data
		}
	})
	t.Logf("the client read %d of %d progress notes", progress, steps)
	if !strings.Contains(result, fmt.Sprintf("done %d", steps)) {
		t.Errorf("result %q", result)
	}
	if progress >= steps {
		t.Errorf("every one of %d progress notes was kept for a client that read nothing", steps)
	}
}
