package api

import (
	"net/http"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// listPins serves GET /v1/pins: every server definition's tool pins
// (admin; the diffs the owner's).
func (s *server) listPins(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	all, err := s.b.ToolPins(c, "")
	if err != nil {
		return err
	}
	out := wire.ToolPins{Servers: make([]wire.ServerPins, 0, len(all))}
	for _, sp := range all {
		out.Servers = append(out.Servers, serverPinsDoc(sp))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// approveTools serves POST /v1/servers/{server}/pins/approve.
func (s *server) approveTools(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	var body wire.ApproveTools
	if err := s.readDocument(w, r, &body, "approval"); err != nil {
		return err
	}
	sp, done, err := s.b.ApproveTools(req, body.Tool, body.Hash)
	if err != nil {
		return err
	}
	if done == nil {
		done = []string{}
	}
	writeJSON(w, http.StatusOK, wire.ApprovedTools{Approved: done, Server: serverPinsDoc(sp)})
	return nil
}

func serverPinsDoc(sp broker.ServerPins) wire.ServerPins {
	out := wire.ServerPins{Server: sp.Server, PinTools: sp.PinTools, Unapproved: sp.Unapproved(), Tools: make([]wire.ToolPin, 0, len(sp.Tools))}
	for _, t := range sp.Tools {
		out.Tools = append(out.Tools, wire.ToolPin{Name: t.Name, State: t.State, Hash: t.Hash, ApprovedHash: t.ApprovedHash,
			Flags: t.Flags, Changed: t.Changed, Withheld: t.Withheld, Diff: t.Diff})
	}
	return out
}
