package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// readDocument reads a BodyDocument request body into v: a JSON object with
// no members v does not have (a misspelt "tll" must not pass for a default);
// an empty body leaves v as it is.
func (s *server) readDocument(w http.ResponseWriter, r *http.Request, v any, what string) error {
	b, err := s.readBody(w, r)
	if err != nil || len(b) == 0 {
		return err
	}
	if err := checkObject(b, what); err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return badBody(fmt.Sprintf("%s: %v", what, err), "see the operation's request schema in /openapi.json")
	}
	return nil
}

// duration parses a Go duration from a document member; "" = 0.
func duration(v, field string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, &broker.Error{Kind: broker.KindBadRequest, Op: "read body", Field: field,
			Msg: fmt.Sprintf("%s %q is not a duration", field, v), Hint: `use a Go duration such as "30s", "5m" or "1h"`}
	}
	return d, nil
}

func leaseDoc(l broker.Lease) wire.Lease {
	return wire.Lease{ID: l.ID, Key: l.Key, TTL: l.TTL.String(), Expires: l.Expires}
}

func (s *server) acquireLease(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	var req wire.LeaseRequest
	if err := s.readDocument(w, r, &req, "lease request"); err != nil {
		return err
	}
	ttl, err := duration(req.TTL, "ttl")
	if err != nil {
		return err
	}
	l, err := s.b.AcquireLease(c, ttl)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, leaseDoc(l))
	return nil
}

func (s *server) renewLease(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	var req wire.LeaseRequest
	if err := s.readDocument(w, r, &req, "lease request"); err != nil {
		return err
	}
	ttl, err := duration(req.TTL, "ttl")
	if err != nil {
		return err
	}
	l, err := s.b.RenewLease(c, param(r, "lease"), ttl)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, leaseDoc(l))
	return nil
}

func (s *server) releaseLease(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	if err := s.b.ReleaseLease(r.Context(), c, param(r, "lease")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// sessionDoc is s as c may see it: its instances through instanceFor, so
// private detail stays the owner's.
func sessionDoc(c broker.Caller, s broker.Session) wire.Session {
	doc := wire.Session{Key: s.Key, Scope: s.Scope, Name: s.Name,
		Creator: wire.SessionCreator{Name: s.Creator.Name, Via: s.Creator.Via, Owner: s.Creator.Owner,
			Host: s.Creator.Host, Cwd: s.Creator.Cwd, Pid: s.Creator.Pid, User: s.Creator.User,
			ParentSession: s.Creator.ParentSession, Client: s.Creator.Client},
		Created: s.Created, LastUsed: s.LastUsed, Calls: s.Calls, Instances: []wire.Instance{}, Dropped: s.Dropped}
	for _, a := range s.History {
		d := wire.SessionAttachment{At: a.At, Pid: a.Pid, Cwd: a.Cwd, End: a.End}
		if !a.Ended.IsZero() {
			d.Ended = &a.Ended
		}
		doc.History = append(doc.History, d)
	}
	if s.IdleTimeout > 0 {
		doc.IdleTimeout = s.IdleTimeout.String()
	}
	for _, in := range s.Instances {
		if d, ok := instanceFor(c, in); ok {
			doc.Instances = append(doc.Instances, d)
		}
	}
	return doc
}

func (s *server) listSessions(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	out := wire.SessionList{Sessions: []wire.Session{}}
	for _, ss := range s.b.Sessions(c) {
		out.Sessions = append(out.Sessions, sessionDoc(c, ss))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *server) getSession(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	ss, err := s.b.Session(c, param(r, "key"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sessionDoc(c, ss))
	return nil
}

func (s *server) stopSession(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	if err := s.b.StopSession(r.Context(), c, param(r, "key")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *server) setSession(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	var req wire.SessionPatch
	if err := s.readDocument(w, r, &req, "session settings"); err != nil {
		return err
	}
	set := broker.SessionSettings{Name: req.Name}
	if req.IdleTimeout != nil {
		d, err := duration(*req.IdleTimeout, "idleTimeout")
		if err != nil {
			return err
		}
		set.IdleTimeout = &d
	}
	ss, err := s.b.SetSession(c, param(r, "key"), set)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sessionDoc(c, ss))
	return nil
}
