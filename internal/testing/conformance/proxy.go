package conformance

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"
)

// Proxy serves, on a fresh loopback port until t ends, a reverse proxy to
// target (an http:// URL) that adds `Authorization: Bearer <token>` to every
// request, and returns the URL to give the suite in its place: the proxy's
// address with target's path and query. It exists because the suite cannot
// send a header of its own.
//
// The proxy is transparent to the browser guard the suite tests
// (dns-rebinding-protection): a Host or Origin naming the proxy itself is
// rewritten to name the target (so "the listener's own origin" stays its
// own), and any other Host or Origin, such as the suite's evil.example.com,
// is forwarded unchanged. Responses are streamed as they come (SSE).
func Proxy(t testing.TB, target, token string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		t.Fatalf("conformance: proxy target %q is not an http:// URL", target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	self := ln.Addr().String()
	base := &url.URL{Scheme: u.Scheme, Host: u.Host}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(base) // Out.Host = "" sends target's host
			if h := pr.In.Host; h != self {
				pr.Out.Host = h
			}
			if o := pr.In.Header.Get("Origin"); o == "http://"+self {
				pr.Out.Header.Set("Origin", "http://"+u.Host)
			}
			pr.Out.Header.Set("Authorization", "Bearer "+token)
		},
		FlushInterval: -1,
	}
	wd := &watchdog{logf: t.Logf, after: slowAfter}
	srv := &http.Server{Handler: wd.wrap(rp), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		wd.end()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close() // open SSE streams do not end on their own
		}
		<-done
	})
	out := *u
	out.Host = self
	return out.String()
}
