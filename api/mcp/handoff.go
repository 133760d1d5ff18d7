package mcp

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// The upgrade in place (package daemon) hands the endpoint's sessions to
// the daemon's next image with its children: a client keeps its
// Mcp-Session-Id, its negotiated version and capabilities, its roots, its
// log level, the names it was listed, its resource subscriptions and its
// session-scoped children, and never sees a 404 for an upgrade. What a
// session had on the wire is not carried: its GET stream ends with the
// old image's connection (the client opens it again, as after any
// disconnect; a Last-Event-ID of the old image starts the new stream
// afresh) and the old image's POST streams were drained before the
// handoff.
//
// A session's rights are not carried either: a restored session is bound
// to the caller who opened it (name, transport) and takes its rights from
// that caller's first request to the new image, as a new session would —
// an upgrade never widens them.

// SessionState is one session as the next image needs it.
type SessionState struct {
	ID         string             `json:"id"`
	Server     string             `json:"server,omitempty"` // "" = the aggregate
	Caller     HandedCaller       `json:"caller"`
	Context    broker.CallContext `json:"context"`
	OwnSession bool               `json:"ownSession,omitempty"`
	Version    string             `json:"version"`
	Mode       string             `json:"mode,omitempty"`
	// Capabilities are the client's, as it declared them.
	Capabilities json.RawMessage `json:"capabilities,omitempty"`
	ClientName   string          `json:"clientName,omitempty"`
	// Roots are the client's root directories when known (RootsKnown).
	Roots      []string `json:"roots,omitempty"`
	RootsKnown bool     `json:"rootsKnown,omitempty"`
	Level      string   `json:"level,omitempty"`
	Warned     bool     `json:"warned,omitempty"`
	// Targets are the instances it used ("server\x00key").
	Targets   []string             `json:"targets,omitempty"`
	Names     map[string][2]string `json:"names,omitempty"`
	URIs      map[string]string    `json:"uris,omitempty"`
	Templates map[string]string    `json:"templates,omitempty"`
	Elicited  []string             `json:"elicited,omitempty"`
	// Subscriptions are its resource subscriptions ("server\x00uri"),
	// subscribed again on its first request to the next image.
	Subscriptions []string `json:"subscriptions,omitempty"`
}

// HandedCaller is who opened a session: what binds it to them.
type HandedCaller struct {
	Name  string `json:"name"`
	Via   string `json:"via"`
	Uid   int    `json:"uid,omitempty"`
	Local bool   `json:"local,omitempty"`
	Owner bool   `json:"owner,omitempty"`
	Token string `json:"token,omitempty"`
}

// Handoff stops the janitor and the notices and returns every session's
// state, leaving the sessions and their children as they are: the daemon
// is about to re-execute itself (its listeners have drained). Stateless
// calls parked for input are not carried; their clients ask again.
func (s *Server) Handoff() []SessionState {
	s.stopNotices()
	s.cancel() // the janitor: nothing may end meanwhile
	s.mu.Lock()
	s.closed = true
	all := slices.Collect(maps.Values(s.sessions))
	s.mu.Unlock()
	out := make([]SessionState, 0, len(all))
	for _, ss := range all {
		out = append(out, ss.state())
	}
	slices.SortFunc(out, func(a, b SessionState) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func (ss *session) state() SessionState {
	c := ss.caller
	st := SessionState{ID: ss.id, Server: ss.server, Context: ss.hdr, OwnSession: ss.ownSession,
		Caller:  HandedCaller{Name: c.Name, Via: c.Via, Uid: c.Uid, Local: c.Local, Owner: c.Owner, Token: c.Token},
		Version: ss.version, Mode: ss.mode, Capabilities: ss.caps.raw, ClientName: ss.clientName}
	ss.mu.Lock()
	st.Roots, st.RootsKnown = slices.Clone(ss.roots.dirs), ss.roots.known
	st.Level, st.Warned = ss.level, ss.warned
	st.Targets = slices.Sorted(maps.Keys(ss.targets))
	st.Elicited = slices.Sorted(maps.Keys(ss.elicited))
	for k, sub := range ss.subs {
		if sub.Why() == "" {
			st.Subscriptions = append(st.Subscriptions, k)
		}
	}
	ss.mu.Unlock()
	slices.Sort(st.Subscriptions)
	ss.routes.mu.Lock()
	st.Names, st.URIs, st.Templates = maps.Clone(ss.routes.names), maps.Clone(ss.routes.uris), maps.Clone(ss.routes.templates)
	ss.routes.mu.Unlock()
	return st
}

// Restore puts the sessions a previous image handed over (Handoff) back,
// before the endpoint serves: each answers its Mcp-Session-Id again.
func (s *Server) Restore(states []SessionState) {
	for _, st := range states {
		if st.ID == "" {
			continue
		}
		c := st.Caller
		ss := s.newSession(st.ID, broker.Caller{Name: c.Name, Via: c.Via, Uid: c.Uid, Local: c.Local, Owner: c.Owner, Token: c.Token}, st.Server, st.Context)
		ss.ownSession = st.OwnSession
		ss.version, ss.mode, ss.clientName = st.Version, st.Mode, st.ClientName
		ss.caps = parseCaps(st.Capabilities)
		ss.roots = rootsState{known: st.RootsKnown, dirs: st.Roots}
		ss.level, ss.warned = st.Level, st.Warned
		for _, t := range st.Targets {
			ss.targets[t] = true
		}
		if len(st.Elicited) > 0 {
			ss.elicited = map[string]bool{}
			for _, e := range st.Elicited {
				ss.elicited[e] = true
			}
		}
		ss.routes.names, ss.routes.uris, ss.routes.templates = st.Names, st.URIs, st.Templates
		ss.resubscribe = st.Subscriptions
		ss.restored = true
		s.mu.Lock()
		s.sessions[ss.id] = ss
		s.mu.Unlock()
	}
	if len(states) > 0 {
		s.log.Info("mcp sessions carried over the upgrade", "sessions", len(states))
	}
}

// bind gives a restored session its caller's rights, from the caller's
// first request to this image (lookup has checked it is the caller who
// opened it), and subscribes its resources again. It runs under s.mu.
func (s *Server) bind(ss *session, c broker.Caller) {
	ss.caller = c
	ss.restored = false
	if len(ss.resubscribe) == 0 {
		return
	}
	subs := ss.resubscribe
	ss.resubscribe = nil
	s.wg.Go(func() {
		for _, k := range subs {
			server, uri, _ := strings.Cut(k, "\x00")
			ss.subscribeAgain(server, uri)
		}
	})
}

// subscribeAgain subscribes a restored session to uri on server; a
// failure is told to the client as the end of that subscription.
func (ss *session) subscribeAgain(server, uri string) {
	params, _ := json.Marshal(map[string]string{"uri": uri})
	ctx, cancel := context.WithTimeout(ss.ctx, ss.srv.opts.RootsWait)
	defer cancel()
	ss.routes.mu.Lock()
	if ss.routes.uris == nil {
		ss.routes.uris = map[string]string{}
	}
	if _, ok := ss.routes.uris[uri]; !ok {
		ss.routes.uris[uri] = server
	}
	ss.routes.mu.Unlock()
	if _, err := ss.subscribe(ctx, nil, &message{Message: jsonrpc.Message{Method: jsonrpc.MethodResourcesSubscribe, Params: params}}); err != nil {
		ss.warn(nil, "mcpx: the subscription to "+uri+" ended: the daemon was upgraded and subscribing again failed; subscribe again")
	}
}
