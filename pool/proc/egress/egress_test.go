package egress_test

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/pool/proc/egress"
)

// raw sends req, verbatim, to the proxy on a connection of its own and
// returns the response with its body read. method is req's method, which
// decides how the response is framed.
func raw(t *testing.T, proxy *url.URL, method, req string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute)) // a hang fails, not a wall-clock assertion
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", req, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// connect opens a tunnel to target through the proxy; the caller owns the
// returned connection. A refusal fails the test.
func connect(t *testing.T, proxy *url.URL, target string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, br, resp := tryConnect(t, proxy, target)
	if resp.StatusCode != http.StatusOK {
		c.Close()
		t.Fatalf("CONNECT %s: %s", target, resp.Status)
	}
	return c, br
}

func tryConnect(t *testing.T, proxy *url.URL, target string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	c, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(time.Minute))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	return c, br, resp
}

// wantRefusal checks that a refusal of host was logged naming the binding
// and saying why.
func wantRefusal(t *testing.T, l *logs, host, why string) {
	t.Helper()
	for _, rec := range l.records("egress refused") {
		if rec["host"] == host && strings.Contains(fmt.Sprint(rec["why"]), why) {
			if rec["server"] != "gh" || rec["instance"] != "gh-1" || rec["port"] == nil {
				t.Errorf("refusal logged without its server, instance and port: %v", rec)
			}
			return
		}
	}
	t.Errorf("no refusal of %s saying %q logged; logs:\n%s", host, why, l)
}

var gh = func(allow ...string) egress.Binding {
	return egress.Binding{Server: "gh", Instance: "gh-1", Allow: allow}
}

func TestConnectAllowed(t *testing.T) {
	pk := newPKI(t)
	h := httpsHost(t, pk, "127.0.0.2:0")
	p, _ := newProxy(t, egress.Options{})
	_, proxy := serve(t, p, gh("api.example.test:"+port(t, h)))
	code, s, err := get(t, client(t, proxy, pk), "https://api.example.test:"+port(t, h)+"/repos?page=2")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET through CONNECT: %d, %v", code, err)
	}
	if !s.TLS || s.Host != "api.example.test:"+port(t, h) || s.URI != "/repos?page=2" {
		t.Errorf("the host saw %+v", s)
	}
	if got := p.Counts()["gh"]; got != (egress.Counts{Allowed: 1}) {
		t.Errorf("Counts = %+v, want one allowed", got)
	}
}

func TestForwardAllowed(t *testing.T) {
	h := httpHost(t, "127.0.0.2:0")
	p, l := newProxy(t, egress.Options{})
	_, proxy := serve(t, p, gh("api.example.test:"+port(t, h)))
	proxy.User = url.UserPassword("child", "pr0xy-s3cret") // Go sends it as Proxy-Authorization
	code, s, err := get(t, client(t, proxy, pki{}), "http://api.example.test:"+port(t, h)+"/x?token=t0ken-s3cret")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET through the proxy: %d, %v", code, err)
	}
	if s.TLS || s.Host != "api.example.test:"+port(t, h) || s.URI != "/x?token=t0ken-s3cret" {
		t.Errorf("the host saw %+v", s)
	}
	if v := s.Headers.Get("Proxy-Authorization"); v != "" {
		t.Errorf("the host got Proxy-Authorization %q", v)
	}
	if _, ok := s.Headers["X-Forwarded-For"]; ok {
		t.Errorf("the host learnt the child's address: %v", s.Headers)
	}
	if got := p.Counts()["gh"]; got != (egress.Counts{Allowed: 1}) {
		t.Errorf("Counts = %+v, want one allowed", got)
	}
	// A refused request logs no secret either.
	get(t, client(t, proxy, pki{}), "http://evil.example.test:"+port(t, h)+"/?token=t0ken-s3cret")
	if out := l.String(); strings.Contains(out, "s3cret") || strings.Contains(out, "Basic") || !strings.Contains(out, "evil.example.test") {
		t.Errorf("logs hold a secret, or miss the refusal:\n%s", out)
	}
}

// TestForwardHeaders: hop-by-hop headers stay with the proxy, and the URI's
// host wins over the Host header (RFC 9112, section 3.2.2).
func TestForwardHeaders(t *testing.T) {
	h := httpHost(t, "127.0.0.2:0")
	p, l := newProxy(t, egress.Options{})
	api := "api.example.test:" + port(t, h)
	_, proxy := serve(t, p, gh(api))
	resp, body := raw(t, proxy, "GET", "GET http://"+api+"/smuggle HTTP/1.1\r\n"+
		"Host: evil.example.test\r\n"+
		"Proxy-Authorization: Basic Y2hpbGQ6czNjcmV0\r\n"+
		"Proxy-Connection: keep-alive\r\n"+
		"Connection: close, X-Hop\r\n"+
		"X-Hop: 1\r\n"+
		"Keep-Alive: 300\r\n"+
		"X-End-To-End: kept\r\n\r\n")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s: %s", resp.Status, body)
	}
	for _, want := range []string{`"host":"` + api + `"`, `"X-End-To-End":["kept"]`} {
		if !strings.Contains(body, want) {
			t.Errorf("the host saw %s, want %s in it", body, want)
		}
	}
	for _, bad := range []string{"evil", "Proxy-Authorization", "Proxy-Connection", "X-Hop", "Keep-Alive"} {
		if strings.Contains(body, bad) {
			t.Errorf("the host saw %s, which holds %s", body, bad)
		}
	}
	// The URI decides: an allowed Host header does not let a refused URI through.
	resp, body = raw(t, proxy, "GET", "GET http://evil.example.test:"+port(t, h)+"/ HTTP/1.1\r\nHost: "+api+"\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "evil.example.test") {
		t.Errorf("a refused URI with an allowed Host: %s %s", resp.Status, body)
	}
	wantRefusal(t, l, "evil.example.test", "host not in the allowlist")
}

// TestPipelined: each request on a connection is checked on its own, so a
// refused one cannot ride behind an allowed one, whatever its framing.
func TestPipelined(t *testing.T) {
	h := httpHost(t, "127.0.0.2:0")
	p, l := newProxy(t, egress.Options{})
	api := "api.example.test:" + port(t, h)
	_, proxy := serve(t, p, gh(api))
	c, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	evil := "GET http://evil.example.test:" + port(t, h) + "/ HTTP/1.1\r\nHost: evil.example.test\r\n\r\n"
	io.WriteString(c, "POST http://"+api+"/ HTTP/1.1\r\nHost: "+api+"\r\nContent-Length: 4\r\n\r\nbody"+evil+
		"POST http://"+api+"/ HTTP/1.1\r\nHost: "+api+"\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"+evil)
	br := bufio.NewReader(c)
	for i, want := range []int{200, 403, 200, 403} {
		resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Errorf("response %d: %s %s, want %d", i, resp.Status, body, want)
		}
	}
	if n := len(l.records("egress refused")); n != 2 {
		t.Errorf("%d refusals logged, want 2", n)
	}
}

func TestRefusedName(t *testing.T) {
	h := tcpHost(t, "127.0.0.2:0")
	_, hp, _ := net.SplitHostPort(h.Addr().String())
	p, l := newProxy(t, egress.Options{})
	_, proxy := serve(t, p, gh("api.example.test:"+hp))
	c, _, resp := tryConnect(t, proxy, "evil.example.test:"+hp)
	c.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("CONNECT to a host not in the allowlist: %s, want 403", resp.Status)
	}
	wantRefusal(t, l, "evil.example.test", "host not in the allowlist")
	resp, body := raw(t, proxy, "GET", "GET http://evil.example.test:"+hp+"/ HTTP/1.1\r\nHost: evil.example.test\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "server gh") || !strings.Contains(body, "evil.example.test:"+hp) {
		t.Errorf("plain GET of a host not in the allowlist: %s %q", resp.Status, body)
	}
	if got := p.Counts()["gh"]; got != (egress.Counts{Refused: 2}) {
		t.Errorf("Counts = %+v, want two refused", got)
	}
}

func TestPattern(t *testing.T) {
	pk := newPKI(t)
	h := httpsHost(t, pk, "127.0.0.2:0")
	p, l := newProxy(t, egress.Options{})
	_, proxy := serve(t, p, gh("*.example.test:"+port(t, h)))
	c := client(t, proxy, pk)
	for _, host := range []string{"a.example.test", "x.y.example.test", "A.Example.Test."} {
		if code, _, err := get(t, c, "https://"+host+":"+port(t, h)+"/"); code != http.StatusOK {
			t.Errorf("%s under *.example.test: %d %v", host, code, err)
		}
	}
	if code, _, err := get(t, c, "https://example.test:"+port(t, h)+"/"); err == nil || code == http.StatusOK {
		t.Errorf("the apex of *.example.test was reached")
	}
	wantRefusal(t, l, "example.test", "host not in the allowlist")
}

// TestRebinding: a name resolving to this machine is refused unless the
// allowlist lists that very address.
func TestRebinding(t *testing.T) {
	pk := newPKI(t)
	local := httpsHost(t, pk, "127.0.0.1:0") // a service on the daemon's loopback
	lp := port(t, local)
	p, l := newProxy(t, egress.Options{})

	_, proxy := serve(t, p, gh("rebind.example.test:"+lp, "private.example.test:"+lp))
	c, _, resp := tryConnect(t, proxy, "rebind.example.test:"+lp)
	c.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a name resolving to 127.0.0.1: %s, want 403", resp.Status)
	}
	wantRefusal(t, l, "rebind.example.test", "127.0.0.1 (loopback")
	c, _, resp = tryConnect(t, proxy, "private.example.test:"+lp)
	c.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a name resolving to 10.1.2.3: %s, want 403", resp.Status)
	}
	wantRefusal(t, l, "private.example.test", "10.1.2.3 (private)")
	c, _, resp = tryConnect(t, proxy, "127.0.0.1:"+lp)
	c.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("127.0.0.1 asked for literally, not listed: %s, want 403", resp.Status)
	}

	_, proxy = serve(t, p, gh("rebind.example.test:"+lp, "127.0.0.1:"+lp))
	if code, _, err := get(t, client(t, proxy, pk), "https://rebind.example.test:"+lp+"/"); code != http.StatusOK {
		t.Errorf("a name resolving to a listed 127.0.0.1: %d %v", code, err)
	}
	if code, _, err := get(t, client(t, proxy, pk), "https://127.0.0.1:"+lp+"/"); code != http.StatusOK {
		t.Errorf("a listed 127.0.0.1: %d %v", code, err)
	}
}

// TestMixedAnswer: of a name's addresses, the refused ones are dropped and
// the others reached.
func TestMixedAnswer(t *testing.T) {
	h := tcpHost(t, "127.0.0.2:0")
	_, hp, _ := net.SplitHostPort(h.Addr().String())
	p, _ := newProxy(t, egress.Options{})
	_, proxy := serve(t, p, gh("mixed.example.test:"+hp))
	c, _ := connect(t, proxy, "mixed.example.test:"+hp) // 127.0.0.1 first, then 127.0.0.2
	c.Close()
}

func TestOwnAddress(t *testing.T) {
	var own netip.Addr
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			own, _ = netip.AddrFromSlice(n.IP.To4())
			break
		}
	}
	if !own.IsValid() {
		t.Skip("this host has no IPv4 address beside loopback to resolve a name to")
	}
	// Permitted by the daemon, but this host's own: still refused.
	p, l := newProxy(t, egress.Options{
		Resolver: resolver{"own.example.test": {own}},
		Permit:   []netip.Prefix{netip.PrefixFrom(own, 32)},
	})
	_, proxy := serve(t, p, gh("own.example.test"))
	c, _, resp := tryConnect(t, proxy, "own.example.test:443")
	c.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a name resolving to %s, this host's: %s, want 403", own, resp.Status)
	}
	wantRefusal(t, l, "own.example.test", "this host's own address)")
}

func TestPorts(t *testing.T) {
	h := tcpHost(t, "127.0.0.2:0")
	_, hp, _ := net.SplitHostPort(h.Addr().String())
	p, l := newProxy(t, egress.Options{})
	_, proxy := serve(t, p, gh("api.example.test", "127.0.0.2"))
	for _, target := range []string{"api.example.test:" + hp, "api.example.test:22", "127.0.0.2:" + hp} {
		c, _, resp := tryConnect(t, proxy, target)
		c.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("CONNECT %s with ports 443 and 80 allowed: %s, want 403", target, resp.Status)
		}
	}
	wantRefusal(t, l, "api.example.test", "port not allowed for this host (allowed: 443, 80)")
	wantRefusal(t, l, "127.0.0.2", "port not allowed for this address")
}

func TestIPLiteral(t *testing.T) {
	h := tcpHost(t, "127.0.0.2:0")
	p, l := newProxy(t, egress.Options{})
	_, proxy := serve(t, p, gh("api.example.test"))
	c, _, resp := tryConnect(t, proxy, h.Addr().String())
	c.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("CONNECT to an address not listed: %s, want 403", resp.Status)
	}
	wantRefusal(t, l, "127.0.0.2", "IP address not in the allowlist")
	_, proxy = serve(t, p, gh(h.Addr().String()))
	c, _ = connect(t, proxy, h.Addr().String())
	c.Close()
}

// TestTunnel: bytes sent right behind the CONNECT reach the host, and a
// half-close passes through: the host answers after the child's end.
func TestTunnel(t *testing.T) {
	h := tcpHost(t, "127.0.0.2:0")
	_, hp, _ := net.SplitHostPort(h.Addr().String())
	p, _ := newProxy(t, egress.Options{})
	_, proxy := serve(t, p, gh("api.example.test:"+hp))
	c, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	fmt.Fprintf(c, "CONNECT api.example.test:%s HTTP/1.1\r\nHost: api.example.test:%[1]s\r\n\r\nhello ", hp)
	io.WriteString(c, "world")
	c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(c)
	if want := "HTTP/1.1 200 Connection established\r\n\r\necho:hello world"; string(got) != want || err != nil {
		t.Errorf("through the tunnel: %q, %v; want %q", got, err, want)
	}
}

func TestNotProxyRequests(t *testing.T) {
	p, l := newProxy(t, egress.Options{MaxHeaderBytes: 1 << 10})
	_, proxy := serve(t, p, gh("api.example.test"))
	tests := []struct {
		name, method, req string
		code              int
		body              string
	}{
		{"origin-form", "GET", "GET / HTTP/1.1\r\nHost: api.example.test\r\n\r\n", 400, "not a proxy request"},
		{"https URI", "GET", "GET https://api.example.test/ HTTP/1.1\r\nHost: api.example.test\r\n\r\n", 400, "https:// goes through CONNECT"},
		{"CONNECT without port", "CONNECT", "CONNECT api.example.test HTTP/1.1\r\nHost: api.example.test\r\n\r\n", 400, "CONNECT names host:port"},
		{"header too large", "GET", "GET http://api.example.test/ HTTP/1.1\r\nHost: api.example.test\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n", 431, ""},
	}
	for _, tt := range tests {
		resp, body := raw(t, proxy, tt.method, tt.req)
		if resp.StatusCode != tt.code || !strings.Contains(body, tt.body) {
			t.Errorf("%s: %s %q, want %d saying %q", tt.name, resp.Status, body, tt.code, tt.body)
		}
	}
	if n := len(l.records("egress refused")); n != 3 {
		t.Errorf("%d refusals logged, want 3 (net/http answers the header itself)", n)
	}
}

// TestHeaderTimeout: a child that never finishes its request header loses
// the connection.
func TestHeaderTimeout(t *testing.T) {
	p, _ := newProxy(t, egress.Options{HeaderTimeout: 50 * time.Millisecond})
	_, proxy := serve(t, p, gh("api.example.test"))
	c, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "CONNECT api.example.test:443 HTTP/1.1\r\n")
	c.SetReadDeadline(time.Now().Add(time.Minute)) // bounds a hang; not the measure
	_, err = io.ReadAll(c)
	if err != nil {
		t.Errorf("the proxy kept a connection with half a header: %v", err)
	}
}

func TestConnLimit(t *testing.T) {
	h := tcpHost(t, "127.0.0.2:0")
	_, hp, _ := net.SplitHostPort(h.Addr().String())
	p, l := newProxy(t, egress.Options{MaxConns: 2})
	_, proxy := serve(t, p, gh("api.example.test:"+hp))
	target := "api.example.test:" + hp
	c1, _ := connect(t, proxy, target)
	defer c1.Close()
	c2, _ := connect(t, proxy, target)
	defer c2.Close()

	c3, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	c3.SetDeadline(time.Now().Add(time.Minute))
	got, _ := io.ReadAll(c3)
	c3.Close()
	if !strings.HasPrefix(string(got), "HTTP/1.1 503 ") || !strings.Contains(string(got), "connection limit reached (2 at once)") {
		t.Errorf("a third connection got %q, want 503 naming the limit", got)
	}
	if recs := l.records("egress refused"); len(recs) != 1 || recs[0]["server"] != "gh" {
		t.Errorf("refusals logged: %v", recs)
	}

	c1.Close() // frees a place, once the proxy has seen it
	for i := 0; ; i++ {
		c, _, resp := tryConnect(t, proxy, target)
		c.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		if i == 500 {
			t.Fatalf("no place freed after a tunnel closed: %s", resp.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServedClose: closing one binding ends its tunnels and leaves the
// others serving; closing it again says it is closed.
func TestServedClose(t *testing.T) {
	h := tcpHost(t, "127.0.0.2:0")
	_, hp, _ := net.SplitHostPort(h.Addr().String())
	p, _ := newProxy(t, egress.Options{})
	target := "api.example.test:" + hp
	s1, proxy1 := serve(t, p, gh(target))
	_, proxy2 := serve(t, p, gh(target))
	c1, _ := connect(t, proxy1, target)
	defer c1.Close()
	c2, _ := connect(t, proxy2, target)
	defer c2.Close()

	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c1.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("a tunnel of the closed binding: read %v, want EOF", err)
	}
	if _, err := net.Dial("tcp", proxy1.Host); err == nil {
		t.Errorf("the closed binding's listener still accepts")
	}
	if err := s1.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close = %v, want net.ErrClosed", err)
	}
	io.WriteString(c2, "still here")
	c2.(*net.TCPConn).CloseWrite()
	if got, _ := io.ReadAll(c2); string(got) != "echo:still here" {
		t.Errorf("the other binding's tunnel: %q", got)
	}
}

// TestProxyClose: closing the proxy ends every tunnel, waits for every
// goroutine it started, and refuses further bindings, closing their
// listeners.
func TestProxyClose(t *testing.T) {
	pk := newPKI(t)
	h := tcpHost(t, "127.0.0.2:0")
	_, hp, _ := net.SplitHostPort(h.Addr().String())
	https := httpsHost(t, pk, "127.0.0.2:0")
	plain := httpHost(t, "127.0.0.2:0")
	before := goroutines()

	p := egress.New(egress.Options{Resolver: testResolver, Permit: []netip.Prefix{netip.PrefixFrom(hostAddr, 32)}})
	target := "api.example.test:" + hp
	var tunnels []net.Conn
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Serve(ln, gh(target, "api.example.test:"+port(t, https), "api.example.test:"+port(t, plain))); err != nil {
			t.Fatal(err)
		}
		proxy := &url.URL{Scheme: "http", Host: ln.Addr().String()}
		c, _ := connect(t, proxy, target)
		defer c.Close()
		tunnels = append(tunnels, c)
		// A TLS tunnel, and a plain-HTTP connection, left idle in the pool
		// of a keep-alive client too, and a refusal.
		tr := &http.Transport{Proxy: http.ProxyURL(proxy), TLSClientConfig: &tls.Config{RootCAs: pk.pool}}
		defer tr.CloseIdleConnections()
		for _, u := range []string{"https://api.example.test:" + port(t, https) + "/", "http://api.example.test:" + port(t, plain) + "/"} {
			if _, _, err := get(t, &http.Client{Transport: tr, Timeout: time.Minute}, u); err != nil {
				t.Fatalf("GET %s: %v", u, err)
			}
		}
		if code, _, _ := get(t, &http.Client{Transport: tr, Timeout: time.Minute}, "http://evil.example.test/"); code != http.StatusForbidden {
			t.Fatalf("GET of a host not allowed: %d", code)
		}
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if blocked := egressGoroutines(); blocked != "" {
		t.Errorf("goroutines of the proxy still waiting after Close:\n%s", blocked)
	}
	for _, c := range tunnels {
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Errorf("a tunnel after Close: read %v, want EOF", err)
		}
	}
	if err := p.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close = %v, want net.ErrClosed", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Serve(ln, gh(target)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Serve after Close = %v, want net.ErrClosed", err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Serve after Close left its listener open: %v", err)
	}
	for _, c := range tunnels {
		c.Close()
	}
	noLeaks(t, before)
}

func TestServeBadAllowlist(t *testing.T) {
	p, _ := newProxy(t, egress.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Serve(ln, gh("api.example.test", "https://x.example.test/"))
	if err == nil || !strings.Contains(err.Error(), "server gh, instance gh-1") || !strings.Contains(err.Error(), `allow[1]`) {
		t.Errorf("Serve with a bad entry = %v, want an error naming the server, instance and entry", err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Serve with a bad allowlist left its listener open: %v", err)
	}
}

// TestRefusalLogSpaced: a child that asks for a refused host again and
// again gets a 403 each time, counted, but past the burst its refusals
// are not each logged: the daemon's log is not the child's to fill.
func TestRefusalLogSpaced(t *testing.T) {
	h := tcpHost(t, "127.0.0.2:0")
	_, hp, _ := net.SplitHostPort(h.Addr().String())
	p, l := newProxy(t, egress.Options{RefusalLogEvery: time.Hour})
	_, proxy := serve(t, p, gh("api.example.test:"+hp))
	const n = egress.RefusalLogBurst + 30
	for i := range n {
		c, _, resp := tryConnect(t, proxy, "evil.example.test:"+hp)
		c.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("refusal %d: %s, want 403", i, resp.Status)
		}
	}
	if got := len(l.records("egress refused")); got != egress.RefusalLogBurst {
		t.Errorf("%d refusals logged of %d, want the burst, %d", got, n, egress.RefusalLogBurst)
	}
	if got := p.Counts()["gh"].Refused; got != n {
		t.Errorf("Counts: %d refused, want every one, %d", got, n)
	}
}
