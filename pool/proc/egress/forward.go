package egress

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"time"
)

// forward serves a request for an absolute http:// URI: what HTTP_PROXY
// clients send. RFC 9112, section 3.2.2: a proxy ignores the Host header
// of such a request and replaces it with the URI's authority — net/http's
// server already drops the child's Host header, and the upstream gets the
// URI's host, so a Host naming another host reaches nothing. Each request
// gets its own upstream connection, closed after the response: nothing is
// pooled across requests, so nothing outlives its handler.
func (s *Served) forward(w http.ResponseWriter, r *http.Request) {
	host, port := r.URL.Hostname(), 80
	if r.URL.Scheme == "https" {
		port = 443
	}
	if p := r.URL.Port(); p != "" {
		var err error
		if port, err = strconv.Atoi(p); err != nil {
			s.refuse(w, &Refusal{Host: host, Why: "port " + strconv.Quote(p) + " is not a number"}, http.StatusBadRequest)
			return
		}
	}
	if r.URL.Scheme != "http" {
		s.refuse(w, &Refusal{Host: host, Port: port, Why: "only http:// URIs are forwarded; https:// goes through CONNECT (set HTTPS_PROXY)"}, http.StatusBadRequest)
		return
	}
	up := s.open(r.Context(), w, host, port)
	if up == nil {
		return
	}
	defer up.Close()
	rp := &httputil.ReverseProxy{
		// ReverseProxy has already dropped the hop-by-hop headers,
		// Proxy-Authorization and Proxy-Connection among them, and with
		// Rewrite it adds no X-Forwarded-* headers: the upstream learns
		// nothing about the child's side.
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.User = nil
			pr.Out.Host = "" // the URI's authority, from pr.Out.URL
			pr.Out.Close = true
			pr.Out.Header.Del("Expect") // net/http answers 100-continue to the child itself
			if pr.Out.Header.Get("Upgrade") != "" {
				// Upgrades are not relayed over plain HTTP (a WebSocket
				// client uses CONNECT through a proxy).
				pr.Out.Header.Del("Upgrade")
				pr.Out.Header.Del("Connection")
			}
		},
		Transport: &oneShot{conn: &idleConn{Conn: up, idle: s.p.opts.IdleTimeout}},
		ErrorLog:  slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the child went away, or the binding closed
			}
			s.failed(w, host, port, err)
		},
	}
	rp.ServeHTTP(w, r)
}

// oneShot sends one request over the connection it was given and reads the
// response; closing the response's body closes the connection.
type oneShot struct {
	conn net.Conn
}

func (o *oneShot) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := req.Write(o.conn); err != nil {
		return nil, err
	}
	br := bufio.NewReader(o.conn)
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			resp.Body = &closeBoth{ReadCloser: resp.Body, conn: o.conn}
			return resp, nil
		}
		resp.Body.Close() // 1xx: informational, skipped
	}
}

// closeBoth is a response body that closes its connection too.
type closeBoth struct {
	io.ReadCloser
	conn net.Conn
}

func (b *closeBoth) Close() error {
	err := b.ReadCloser.Close()
	b.conn.Close()
	return err
}

// idleConn fails a read or write that makes no progress for idle.
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c *idleConn) Read(p []byte) (int, error) {
	c.Conn.SetReadDeadline(time.Now().Add(c.idle))
	return c.Conn.Read(p)
}

func (c *idleConn) Write(p []byte) (int, error) {
	c.Conn.SetWriteDeadline(time.Now().Add(c.idle))
	return c.Conn.Write(p)
}
