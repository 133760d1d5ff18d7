package runner

import (
	"cmp"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/wire"
)

// Relay is `mcpx run`'s way to a broker on another machine: an HTTP
// listener on a loopback port, for one script's lifetime, that sends each
// request on through a Client. The script's generated client speaks HTTP
// to $MCPX_URL; a remote broker may be reachable only through the CLI's
// own embedded tailnet node (--tsnet), and its credentials are the CLI's.
// So:
//
//   - the script gets a token of its own (Token, for $MCPX_TOKEN), random
//     per relay, and never sees the client's (the relay sends that one on);
//   - the script's cwd (Mcpx-Cwd: its process's directory on this machine)
//     is mapped to the broker's side: the run's directory to the one the
//     CLI mapped, anything else by the client config's pathMappings; a cwd
//     no mapping covers is refused, naming it, as the CLI refuses it; a
//     request with none gets the run's;
//   - the browser guard's headers (Origin) and hop-by-hop headers stop
//     here; responses, streamed ones included, pass through as they come.
//
// This is the runner's one HTTP server; it serves no one but the script
// that holds its token. (The Go client serves none: it is a client.)
//
//	r, err := runner.StartRelay(bc, runner.RelayOptions{Local: dir, Remote: caller.Cwd, Mappings: cfg.PathMappings, Config: file})
//	defer r.Close()
//	env := []string{"MCPX_URL=" + r.URL(), "MCPX_TOKEN=" + r.Token()}
type Relay struct {
	c      *client.Client
	token  string
	remote string         // the run's directory on the broker's machine
	paths  client.PathMap // the run's directory to remote, and the client config's mappings
	config string         // the client config file, for messages

	ln     net.Listener
	srv    *http.Server
	served chan struct{}  // closed when the serving goroutine has returned
	more   sync.WaitGroup // the goroutines serving listeners given to Serve
	closed atomic.Bool    // set by the first Close
}

// RelayOptions configure StartRelay.
type RelayOptions struct {
	// Local is the run's directory on this machine; Remote is the same
	// directory on the broker's (as the CLI mapped it, or --cwd).
	Local, Remote string
	// Mappings are the client config's (local directory -> broker
	// directory); nil = none beyond Local.
	Mappings map[string]string
	// Config is the client config file, named in messages.
	Config string
}

// StartRelay listens on a loopback port and serves the relay to c until
// Close. The caller owns the relay and must Close it.
func StartRelay(c *client.Client, o RelayOptions) (*Relay, error) {
	all := maps.Clone(o.Mappings)
	if all == nil {
		all = map[string]string{}
	}
	all[o.Local] = o.Remote // the run's own mapping, as the CLI made it (or --cwd)
	paths, err := client.NewPathMap(all)
	if err != nil {
		return nil, fmt.Errorf("client config %s: %w", o.Config, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("mcpx run: the relay to the remote broker: %w", err)
	}
	r := &Relay{c: c, token: rand.Text(), remote: o.Remote, paths: paths, config: o.Config, ln: ln, served: make(chan struct{})}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(r.served)
		r.srv.Serve(ln) //nolint:errcheck // ErrServerClosed at Close
	}()
	return r, nil
}

// Serve serves the relay on ln too (a confined script's own loopback,
// runner.Confinement) until Close, which closes it; after Close it
// closes ln at once.
func (r *Relay) Serve(ln net.Listener) {
	r.more.Add(1)
	go func() {
		defer r.more.Done()
		r.srv.Serve(ln) //nolint:errcheck // ErrServerClosed at Close, or ln closed by its owner
	}()
}

// URL is the relay's base URL, for $MCPX_URL.
func (r *Relay) URL() string { return "http://" + r.ln.Addr().String() }

// Token is the bearer token the relay takes, for $MCPX_TOKEN.
func (r *Relay) Token() string { return r.token }

// Close stops the relay and waits for its serving goroutine to return;
// requests in flight are cut off (the script has ended by then). A second
// Close returns an error wrapping net.ErrClosed.
func (r *Relay) Close() error {
	if r.closed.Swap(true) {
		return fmt.Errorf("the relay: %w", net.ErrClosed)
	}
	err := r.srv.Close()
	<-r.served
	r.more.Wait()
	return err
}

// hopHeaders are not passed on either way (RFC 9110 7.6.1), nor are the
// request's credentials and browser headers, nor the encoding the relay's
// own client negotiates and undoes.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer",
	"Transfer-Encoding", "Upgrade", "Authorization", "Cookie", "Origin", "Accept-Encoding", "Content-Encoding", "Content-Length"}

func (r *Relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	got, _ := strings.CutPrefix(req.Header.Get(wire.HeaderAuthorization), "Bearer ")
	if subtle.ConstantTimeCompare([]byte(got), []byte(r.token)) != 1 {
		relayProblem(w, wire.KindUnauthorized, 401, "the run's relay takes only the token of $MCPX_TOKEN", "")
		return
	}
	h := req.Header.Clone()
	for _, k := range hopHeaders {
		h.Del(k)
	}
	// What the script sends is the script's, whatever it declares: a
	// scopePolicy that takes overrides from some caller kinds only must
	// not take the script's for the CLI's.
	h.Del(wire.HeaderScopeFrom)
	if h.Get(wire.HeaderScope) != "" {
		h.Set(wire.HeaderScopeFrom, "script")
	}
	if cwd := h.Get(wire.HeaderCwd); cwd != "" {
		mapped, ok := r.paths.Map(cwd)
		if !ok {
			real, _ := filepath.EvalSymlinks(cwd)
			relayProblem(w, wire.KindBadRequest, 400, (&client.UnmappedError{Dir: cmp.Or(real, filepath.Clean(cwd)), Config: r.config}).Error(), wire.HeaderCwd)
			return
		}
		h.Set(wire.HeaderCwd, mapped)
	} else {
		h.Set(wire.HeaderCwd, r.remote) // a request that names none is the run's
	}
	resp, err := r.c.Forward(req.Context(), req.Method, req.URL.RequestURI(), req.Body, h)
	if err != nil {
		if req.Context().Err() == nil {
			relayProblem(w, wire.KindUnavailable, 503, fmt.Sprintf("the relay cannot reach the broker at %s: %v", r.c.Addr(), err), "")
		}
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	for _, k := range hopHeaders {
		w.Header().Del(k)
	}
	w.WriteHeader(resp.StatusCode)
	// Copy as it arrives: a streamed call's events reach the script one by
	// one, not when the call ends.
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			rc.Flush() //nolint:errcheck // the script is gone if this fails
		}
		if err != nil {
			return
		}
	}
}

func relayProblem(w http.ResponseWriter, kind string, status int, detail, field string) {
	w.Header().Set("Content-Type", wire.MediaProblem)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(wire.Problem{Type: wire.ProblemTypeBase + kind, Title: http.StatusText(status), //nolint:errcheck // the script is gone if this fails
		Status: status, Detail: detail, Field: field})
}
