package main

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
	"time"

	"mcpx.dev/mcpx/api/client"
	"mcpx.dev/mcpx/api/wire"
)

// runRelay is `mcpx run`'s way to a broker on another machine. The script's
// generated client speaks HTTP to $MCPX_URL; a remote broker may be
// reachable only through the CLI's own embedded tailnet node (--tsnet),
// and its credentials are the CLI's. So the CLI listens on a loopback port
// for the run's lifetime and relays each request through its own client:
//
//   - the script gets a token of its own ($MCPX_TOKEN), random per run,
//     and never sees the CLI's (the relay sends that one on);
//   - the script's cwd (Mcpx-Cwd: its process's directory on this machine)
//     is mapped to the broker's side: the run's directory to the one the
//     CLI mapped, anything else by the client config's pathMappings; a cwd
//     no mapping covers is refused, naming it, as the CLI refuses it; a
//     request with none gets the run's;
//   - the browser guard's headers (Origin) and hop-by-hop headers stop
//     here; responses, streamed ones included, pass through as they come.
type runRelay struct {
	bc     *client.Client
	token  string
	remote string         // the run's directory on the broker's machine
	paths  client.PathMap // the run's directory to remote, and the client config's mappings
	config string         // the client config file, for messages

	ln  net.Listener
	srv *http.Server
}

// startRunRelay listens on a loopback port and serves the relay until
// Close. local is the run's directory here, remote the broker's; mappings
// are the client config's (local directory -> broker directory).
func startRunRelay(bc *client.Client, local, remote string, mappings map[string]string, config string) (*runRelay, error) {
	all := maps.Clone(mappings)
	if all == nil {
		all = map[string]string{}
	}
	all[local] = remote // the run's own mapping, as the CLI made it (or --cwd)
	paths, err := client.NewPathMap(all)
	if err != nil {
		return nil, fmt.Errorf("client config %s: %w", config, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("mcpx run: the relay to the remote broker: %w", err)
	}
	r := &runRelay{bc: bc, token: rand.Text(), remote: remote, paths: paths, config: config, ln: ln}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln) //nolint:errcheck // ErrServerClosed at Close
	return r, nil
}

// URL is the relay's base URL, for $MCPX_URL.
func (r *runRelay) URL() string { return "http://" + r.ln.Addr().String() }

// Close stops the relay; requests in flight are cut off (the script has
// ended by then).
func (r *runRelay) Close() { r.srv.Close() }

// hopHeaders are not passed on either way (RFC 9110 7.6.1), nor are the
// request's credentials and browser headers, nor the encoding the relay's
// own client negotiates and undoes.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer",
	"Transfer-Encoding", "Upgrade", "Authorization", "Cookie", "Origin", "Accept-Encoding", "Content-Encoding", "Content-Length"}

func (r *runRelay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	got, _ := strings.CutPrefix(req.Header.Get(wire.HeaderAuthorization), "Bearer ")
	if subtle.ConstantTimeCompare([]byte(got), []byte(r.token)) != 1 {
		relayProblem(w, wire.KindUnauthorized, 401, "the run's relay takes only the token of $MCPX_TOKEN", "")
		return
	}
	h := req.Header.Clone()
	for _, k := range hopHeaders {
		h.Del(k)
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
	resp, err := r.bc.Forward(req.Context(), req.Method, req.URL.RequestURI(), req.Body, h)
	if err != nil {
		if req.Context().Err() == nil {
			relayProblem(w, wire.KindUnavailable, 503, fmt.Sprintf("the relay cannot reach the broker at %s: %v", r.bc.Addr(), err), "")
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
