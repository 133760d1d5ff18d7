package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// A session is one MCP client's conversation with the endpoint: a
// 2025-11-25 session (its id in Mcp-Session-Id), or the one request of a
// stateless client (id "").
type session struct {
	srv    *Server
	id     string
	caller broker.Caller
	server string // "" = the aggregate
	// hdr is the caller context the client's headers declared (Mcpx-Cwd,
	// Mcpx-Session, …) when it opened the session.
	hdr broker.CallContext
	// ownSession: the MCP session is the caller's session (no
	// Mcpx-Session header): its session-scoped children stop with it.
	ownSession bool
	version    string
	mode       string // Request.Mode: the tool surface the client asked for
	caps       clientCaps
	clientName string

	ctx    context.Context // its calls run on it; cancelled when it ends
	cancel context.CancelFunc
	calls  jsonrpc.InFlight // the client's requests in flight

	get *stream // the GET stream (server-initiated messages)
	// held counts the resumes of ended streams kept open (holdEnded).
	held atomic.Int32

	mu        sync.Mutex
	lastUse   time.Time
	streams   map[string]*stream // POST streams still resumable
	streamSeq int
	pending   map[string]chan json.RawMessage // our requests to the client, by id
	reqSeq    int64
	roots     rootsState
	warned    bool   // the no-cwd warning was sent
	endWhy    string // set by the janitor under Server.mu
	closed    bool
	// targets are the instances the session has used ("server\x00key"):
	// their notifications reach it.
	targets map[string]bool
	level   string // logging/setLevel's level; "" = all
	// elicited are the elicitationIds of the URL-mode elicitations the
	// session was asked: only their notifications/elicitation/complete
	// reach it (another session of the same instance never sees them).
	elicited map[string]bool
	routes   routing
	// subs are its resource subscriptions ("server\x00uri"; subscribe.go).
	subs map[string]*broker.Subscription
	// input answers a stateless call's requests for input (stateless.go).
	input broker.InputHandler
	// header is a stateless request's HTTP header (its Mcp-Param-*
	// headers are checked against its arguments); nil for a session.
	header http.Header
	// restored: the daemon's previous image handed the session over
	// (handoff.go); its caller's rights come with their first request.
	// resubscribe are its subscriptions to make again then.
	restored    bool
	resubscribe []string
}

// clientCaps are the client capabilities the endpoint acts on.
type clientCaps struct {
	roots, rootsChanged   bool
	sampling              bool
	elicitForm, elicitURL bool
	elicitation           json.RawMessage // as declared; nil = none
	raw                   json.RawMessage
}

// rootsState is what the session knows of the client's roots.
type rootsState struct {
	known  bool     // asked and answered since the last list_changed
	dirs   []string // the roots' directories, in the client's order
	asking chan struct{}
}

func (srv *Server) newSession(id string, c broker.Caller, server string, hdr broker.CallContext) *session {
	ctx, cancel := context.WithCancel(srv.ctx)
	ss := &session{
		srv: srv, id: id, caller: c, server: server, hdr: hdr,
		ctx: ctx, cancel: cancel,
		get:     newStream("g"),
		lastUse: time.Now(),
		streams: map[string]*stream{},
		pending: map[string]chan json.RawMessage{},
		targets: map[string]bool{},
		subs:    map[string]*broker.Subscription{},
	}
	if id != "" && hdr.Session == "" {
		ss.ownSession = true
		ss.hdr.Session = ss.sessionID()
	}
	return ss
}

// sessionID is the caller session the MCP session stands for.
func (ss *session) sessionID() string { return "mcp-" + ss.id }

func (ss *session) touch() {
	ss.mu.Lock()
	ss.lastUse = time.Now()
	ss.mu.Unlock()
}

// expired says why the janitor should end the session: idle for idle
// (no request, whatever its GET stream does), or its GET stream gone for
// grace with nothing since. "" = not.
func (ss *session) expired(now time.Time, idle, grace time.Duration) string {
	if ss.calls.Len() > 0 { // first: a call's end touches the session before it leaves calls
		return ""
	}
	ss.mu.Lock()
	last := ss.lastUse
	ss.mu.Unlock()
	if now.Sub(last) > idle {
		return "idle for " + idle.String()
	}
	if gone := ss.get.idleSince(); !gone.IsZero() && gone.After(last) && now.Sub(gone) > grace {
		return "the client disconnected"
	}
	return ""
}

func (ss *session) close() {
	ss.mu.Lock()
	ss.closed = true
	for id, ch := range ss.pending {
		close(ch)
		delete(ss.pending, id)
	}
	ss.mu.Unlock()
	ss.cancel()
	ss.get.end(nil)
	ss.dropSubscriptions()
}

// maxHeld bounds the resumes of ended streams a session keeps open at
// once; beyond it, a resume takes the GET stream over as any GET does.
const maxHeld = 8

// hold counts one more held resume, false over maxHeld.
func (ss *session) hold() bool {
	if ss.held.Add(1) > maxHeld {
		ss.held.Add(-1)
		return false
	}
	return true
}

func (ss *session) unhold() { ss.held.Add(-1) }

// newStream is a POST's answer stream.
func (ss *session) newStream() *stream {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.streamSeq++
	st := newStream(strconv.Itoa(ss.streamSeq))
	if ss.id != "" {
		ss.streams[st.id] = st
	}
	return st
}

func (ss *session) dropStream(st *stream) {
	ss.mu.Lock()
	delete(ss.streams, st.id)
	ss.mu.Unlock()
}

// stream finds a stream by id for a resume; "g" is the GET stream.
func (ss *session) stream(id string) *stream {
	if id == ss.get.id {
		return ss.get
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.streams[id]
}

// ask sends the client the request method with params on st (the stream
// of the call it belongs to; nil = the GET stream) and waits for its
// answer, at most wait. The answer is the JSON-RPC response, whole.
func (ss *session) ask(ctx context.Context, st *stream, method string, params json.RawMessage, wait time.Duration) (json.RawMessage, error) {
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return nil, errors.New("the session ended")
	}
	ss.reqSeq++
	id := "mcpx-" + strconv.FormatInt(ss.reqSeq, 10)
	ch := make(chan json.RawMessage, 1)
	ss.pending[id] = ch
	ss.mu.Unlock()
	defer func() {
		ss.mu.Lock()
		delete(ss.pending, id)
		ss.mu.Unlock()
	}()
	var compact bytes.Buffer
	if len(params) > 0 {
		if err := json.Compact(&compact, params); err != nil {
			return nil, err
		}
	}
	msg := jsonrpc.AppendRequest(nil, jsonrpc.AppendString(nil, id), method, compact.Bytes())
	if st == nil {
		st = ss.get
	}
	st.add(msg)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case resp, ok := <-ch:
		if !ok {
			return nil, errors.New("the session ended")
		}
		return resp, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, fmt.Errorf("the client did not answer %s within %s", method, wait)
	}
}

// answered hands the client's response to the request that waits for it.
func (ss *session) answered(id string, resp json.RawMessage) bool {
	ss.mu.Lock()
	ch := ss.pending[id]
	delete(ss.pending, id)
	ss.mu.Unlock()
	if ch == nil {
		return false
	}
	ch <- resp
	return true
}

// notify sends the client a notification on st (nil = the GET stream).
func (ss *session) notify(st *stream, method string, params any) {
	msg, err := jsonrpc.Notification(method, params)
	if err != nil {
		return
	}
	if st == nil {
		st = ss.get
	}
	st.add(msg)
}

// warn sends the client a notifications/message warning from mcpx.
func (ss *session) warn(st *stream, text string) {
	ss.notify(st, jsonrpc.MethodMessage, map[string]any{"level": "warning", "logger": "mcpx", "data": text})
}

// cwd is the caller's cwd for a request: the first of the client's roots
// the caller's rights allow (asked on st when not known, or changed since),
// else the Mcpx-Cwd the client declared, else "" (calls degrade; the client
// is told once).
func (ss *session) cwd(ctx context.Context, st *stream) string {
	if ss.caps.roots {
		if dirs := ss.rootDirs(ctx, st); len(dirs) > 0 {
			for _, d := range dirs {
				if ss.caller.Rights.MayUseDir(d) {
					return d
				}
			}
			return dirs[0]
		}
	}
	if ss.hdr.Cwd != "" {
		return ss.hdr.Cwd
	}
	ss.mu.Lock()
	// A stateless client gets no log it did not ask for (SEP-2575).
	warn := !ss.warned && ss.id != ""
	ss.warned = true
	ss.mu.Unlock()
	if warn {
		ss.warn(st, "mcpx: the client declared no roots and no Mcpx-Cwd header, so servers scoped to a repository or worktree run in their global scope; give the client a root (or send Mcpx-Cwd) to get each worktree its own server")
	}
	return ""
}

// rootDirs returns the client's roots, asking roots/list when they are not
// known. One ask at a time; others wait for it.
func (ss *session) rootDirs(ctx context.Context, st *stream) []string {
	for range 3 {
		ss.mu.Lock()
		r := &ss.roots
		if r.known || ss.id == "" {
			dirs := r.dirs // a stateless client's come in inputResponses
			ss.mu.Unlock()
			return dirs
		}
		if r.asking != nil {
			ch := r.asking
			ss.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil
			}
		}
		ch := make(chan struct{})
		r.asking = ch
		ss.mu.Unlock()

		dirs, err := ss.listRoots(ctx, st)
		ss.mu.Lock()
		r.asking = nil
		if err == nil {
			r.known, r.dirs = true, dirs
		}
		ss.mu.Unlock()
		close(ch)
		if err != nil {
			ss.srv.log.Debug(jsonrpc.MethodRootsList, "session", ss.id, "err", err)
			return nil
		}
		return dirs
	}
	return nil
}

// listRoots asks the client for its roots and reads their directories.
func (ss *session) listRoots(ctx context.Context, st *stream) ([]string, error) {
	resp, err := ss.ask(ctx, st, jsonrpc.MethodRootsList, json.RawMessage(`{}`), ss.srv.opts.RootsWait)
	if err != nil {
		return nil, err
	}
	var r struct {
		Result *struct {
			Roots []struct {
				URI string `json:"uri"`
			} `json:"roots"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		return nil, err
	}
	if r.Error != nil || r.Result == nil {
		return nil, errors.New("the client answered roots/list with an error")
	}
	var dirs []string
	for _, root := range r.Result.Roots {
		if d, ok := rootDir(root.URI); ok {
			dirs = append(dirs, d)
		}
	}
	return dirs, nil
}

// rootDir is the directory of a file:// root URI.
func rootDir(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") {
		return "", false
	}
	p := filepath.Clean(u.Path)
	if !filepath.IsAbs(p) {
		return "", false
	}
	return p, true
}

// rootsChanged forgets the roots: the next request asks again.
func (ss *session) rootsChanged() {
	ss.mu.Lock()
	ss.roots.known = false
	ss.mu.Unlock()
}

// used notes that the session's calls reach an instance.
func (ss *session) used(server, key string) {
	k := server + "\x00" + key
	ss.mu.Lock()
	ss.targets[k] = true
	ss.mu.Unlock()
}

// notice passes on a child's notification if the session uses its
// instance: logs and resource updates as they are (logs named by their
// server), list changes as the aggregate's own.
func (ss *session) notice(n broker.Notice) {
	if n.Method == broker.NoticeReload {
		for _, m := range []string{jsonrpc.MethodToolsListChanged, jsonrpc.MethodPromptsListChanged, jsonrpc.MethodResourcesListChanged} {
			ss.notify(nil, m, nil)
		}
		return
	}
	ss.mu.Lock()
	uses := ss.targets[n.Server+"\x00"+n.Key]
	level := ss.level
	ss.mu.Unlock()
	if !uses {
		return
	}
	switch n.Method {
	case jsonrpc.MethodMessage:
		o, err := parseObject(n.Params)
		if err != nil || !atLeast(o.str("level"), level) {
			return
		}
		if ss.server == "" {
			logger := n.Server
			if l := o.str("logger"); l != "" {
				logger += "/" + l
			}
			o = o.setString("logger", logger)
		}
		ss.notify(nil, n.Method, o)
	case jsonrpc.MethodElicitationComplete:
		if o, err := parseObject(n.Params); err == nil && ss.takeElicited(o.str("elicitationId")) {
			ss.notify(nil, n.Method, n.Params)
		}
	case jsonrpc.MethodToolsListChanged, jsonrpc.MethodPromptsListChanged,
		jsonrpc.MethodResourcesListChanged:
		// Resource updates reach only their subscribers (subscribe.go).
		ss.notify(nil, n.Method, n.Params)
	}
}

// logLevels orders the syslog levels of notifications/message.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// atLeast reports whether level is at or above min ("" = everything).
func atLeast(level, min string) bool {
	if min == "" {
		return true
	}
	li, mi := -1, -1
	for i, l := range logLevels {
		if l == level {
			li = i
		}
		if l == min {
			mi = i
		}
	}
	return li >= mi
}
