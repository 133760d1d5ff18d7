package egress_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/pool/proc/egress"
)

// hostAddr is the loopback address the test hosts listen on. It is not
// 127.0.0.1, so that a name resolving to 127.0.0.1 can be refused while
// Options.Permit lets the test hosts be reached.
var hostAddr = netip.MustParseAddr("127.0.0.2")

// resolver maps test names to addresses; any other name does not exist.
type resolver map[string][]netip.Addr

func (r resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[strings.ToLower(host)]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// testResolver resolves the test hosts' names.
var testResolver = resolver{
	"api.example.test":     {hostAddr},
	"a.example.test":       {hostAddr},
	"x.y.example.test":     {hostAddr},
	"example.test":         {hostAddr},
	"evil.example.test":    {hostAddr},
	"rebind.example.test":  {netip.MustParseAddr("127.0.0.1")},
	"mixed.example.test":   {netip.MustParseAddr("127.0.0.1"), hostAddr},
	"private.example.test": {netip.MustParseAddr("10.1.2.3")},
}

// logs is a log sink the test reads: JSON records, one a line.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// records returns the records whose msg is msg.
func (l *logs) records(msg string) []map[string]any {
	var out []map[string]any
	for line := range strings.Lines(l.String()) {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// newProxy returns a proxy resolving the test names, permitting hostAddr,
// and logging into the returned sink; it is closed at the test's end.
func newProxy(t *testing.T, opts egress.Options) (*egress.Proxy, *logs) {
	t.Helper()
	l := &logs{}
	opts.Logger = slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if opts.Resolver == nil {
		opts.Resolver = testResolver
	}
	if opts.Permit == nil {
		opts.Permit = []netip.Prefix{netip.PrefixFrom(hostAddr, 32)}
	}
	p := egress.New(opts)
	t.Cleanup(func() { p.Close() })
	return p, l
}

// serve serves a fresh loopback listener under b and returns the proxy's
// URL for it.
func serve(t *testing.T, p *egress.Proxy, b egress.Binding) (*egress.Served, *url.URL) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Serve(ln, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, &url.URL{Scheme: "http", Host: ln.Addr().String()}
}

// pki is a test CA and a certificate it issued for the test names.
type pki struct {
	pool  *x509.CertPool
	caPEM []byte
	cert  tls.Certificate
}

func newPKI(t testing.TB) pki {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "egress test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ = x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "api.example.test"},
		DNSNames:     []string{"api.example.test", "example.test", "*.example.test", "*.y.example.test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 2)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pki{
		pool:  pool,
		caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		cert:  tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
	}
}

// seen is what a test host saw of a request, as it answers it.
type seen struct {
	Host    string      `json:"host"`
	URI     string      `json:"uri"`
	TLS     bool        `json:"tls"`
	Headers http.Header `json:"headers"`
	Body    string      `json:"body"`
}

func echo(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(seen{Host: r.Host, URI: r.RequestURI, TLS: r.TLS != nil, Headers: r.Header, Body: string(body)})
}

// httpsHost starts a TLS test host on addr (port 0: any), answering with
// what it saw.
func httpsHost(t *testing.T, p pki, addr string) *httptest.Server {
	t.Helper()
	s := unstarted(t, addr)
	s.TLS = &tls.Config{Certificates: []tls.Certificate{p.cert}}
	s.StartTLS()
	return s
}

// httpHost starts a plain-HTTP test host on addr.
func httpHost(t *testing.T, addr string) *httptest.Server {
	t.Helper()
	s := unstarted(t, addr)
	s.Start()
	return s
}

// unstarted is a test host on addr, closed at the test's end.
func unstarted(t *testing.T, addr string) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewUnstartedServer(http.HandlerFunc(echo))
	s.Listener.Close()
	s.Listener = ln
	t.Cleanup(s.Close)
	return s
}

// port is the port of a test host.
func port(t testing.TB, s *httptest.Server) string {
	t.Helper()
	_, p, err := net.SplitHostPort(s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// client is an HTTP client that goes through proxy and trusts the test CA.
func client(t *testing.T, proxy *url.URL, p pki) *http.Client {
	t.Helper()
	tr := &http.Transport{
		Proxy:             http.ProxyURL(proxy),
		TLSClientConfig:   &tls.Config{RootCAs: p.pool},
		DisableKeepAlives: true,
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: time.Minute}
}

// get GETs u and returns the status and what the host saw (zero when the
// proxy answered). A refused CONNECT is an error from Go's transport; its
// status is then 0 and err names it.
func get(t *testing.T, c *http.Client, u string) (int, seen, error) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		return 0, seen{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, seen{}, err
	}
	var s seen
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &s); err != nil {
			return resp.StatusCode, s, errors.New("not JSON: " + string(body))
		}
	}
	return resp.StatusCode, s, nil
}

// tcpHost starts a TCP host on addr that, on each connection, reads until
// the client half-closes and then writes back "echo:" and what it read.
func tcpHost(t testing.TB, addr string) net.Listener {
	t.Helper()
	return tcpServe(t, addr, func(c net.Conn) {
		b, _ := io.ReadAll(c)
		c.Write(append([]byte("echo:"), b...))
	})
}

// tcpServe serves each connection on addr with handle, in a goroutine of
// its own, and closes the connection when handle returns. At the test's
// end it closes the listener and every connection, and waits for the
// goroutines.
func tcpServe(t testing.TB, addr string, handle func(net.Conn)) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	closed := false
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if closed {
				mu.Unlock()
				c.Close()
				continue
			}
			conns[c] = true
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				handle(c)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		closed = true
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln
}
