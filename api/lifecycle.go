package api

import (
	"net/http"
	"strconv"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// The lifecycle commands: restart a server, refresh the schema cache (and
// a forced stop, in daemon.go).

func (s *server) restartServer(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	if !c.Rights.Admin() {
		return &broker.Error{Kind: broker.KindForbidden, Op: "restart server", Msg: "restarting a server needs admin rights"}
	}
	server := param(r, "server")
	res, err := s.b.RestartServer(c, server)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.Restarted{Server: server, Replaced: nonNil(res.Replaced), Stopped: nonNil(res.Stopped)})
	return nil
}

func (s *server) refresh(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	if !c.Rights.Admin() {
		return &broker.Error{Kind: broker.KindForbidden, Op: "refresh", Msg: "refreshing the schema cache needs admin rights"}
	}
	server := r.URL.Query().Get(wire.QueryServer)
	res, err := s.b.Refresh(r.Context(), c, server)
	if err != nil {
		return err
	}
	doc := wire.Refreshed{Server: server, Dropped: res.Dropped, Listed: nonNil(res.Listed)}
	for id, why := range res.Failed {
		if doc.Failed == nil {
			doc.Failed = map[string]string{}
		}
		if !isOwner(c) {
			why = "the child did not answer tools/list; the daemon's log says why"
		}
		doc.Failed[id] = why
	}
	writeJSON(w, http.StatusOK, doc)
	return nil
}

// nonNil is ids, or an empty list for none: the documents say [] rather
// than null.
func nonNil(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}

// boolQuery reads the query parameter name as true or false; absent =
// false. op names the operation in the error.
func boolQuery(r *http.Request, name, op string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, &broker.Error{Kind: broker.KindBadRequest, Op: op, Field: name,
			Msg: "?" + name + "= must be true or false, not " + strconv.Quote(v)}
	}
	return b, nil
}
