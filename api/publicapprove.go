package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"mcpx.dev/mcpx/api/public"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// maxApprovalTTL bounds how long an approved client may keep refreshing.
const maxApprovalTTL = 30 * 24 * time.Hour

// approvePublic is POST /v1/public/approve (`mcpx auth approve`): the
// owner, on the unix socket only, decides an OAuth client's sign-in on the
// public face by the code its page shows. The client's token carries the
// owner's rights narrowed to the servers and roots given.
func (s *server) approvePublic(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	if c.Via != wire.ViaUnix || !c.Owner {
		return &broker.Error{Kind: broker.KindForbidden, Op: "approve", Msg: "only the daemon's owner approves sign-ins on the public face, on its unix socket",
			Hint: "run `mcpx auth approve CODE` on the daemon's machine as its user"}
	}
	if s.public == nil {
		return &broker.Error{Kind: broker.KindUnavailable, Op: "approve", Msg: "this daemon serves no public face",
			Hint: "start it with `mcpx serve --public-listen ADDR --public-url URL` or `--public funnel` (docs/public.md)"}
	}
	b, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req wire.PublicApprove
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Code == "" {
		return &broker.Error{Kind: broker.KindBadRequest, Op: "approve", Field: "body", Msg: "the body is not an approval",
			Hint: `send {"code": "BCDF-GHJK", "servers": ["demo"], "roots": ["/abs/path"], "ttl": "8h"}`}
	}
	if req.Deny {
		p, err := s.public.Deny(req.Code)
		return s.approved(w, p, err, true)
	}
	a, err := approval(c, req)
	if err != nil {
		return err
	}
	p, err := s.public.Approve(req.Code, a)
	return s.approved(w, p, err, false)
}

// approval is the approval req asks for: the approver's rights narrowed to
// one rule of its servers and roots.
func approval(c broker.Caller, req wire.PublicApprove) (public.Approval, error) {
	ttl := 24 * time.Hour
	if req.TTL != "" {
		d, err := time.ParseDuration(req.TTL)
		if err != nil || d <= 0 || d > maxApprovalTTL {
			return public.Approval{}, &broker.Error{Kind: broker.KindBadRequest, Op: "approve", Field: "ttl",
				Msg: fmt.Sprintf("ttl %q is not a duration between 1s and %s", req.TTL, maxApprovalTTL), Hint: `write it as Go does: "90m", "8h", "168h"`}
		}
		ttl = d
	}
	rule := rights.Rule{Servers: req.Servers}
	for _, root := range req.Roots {
		canon, ok := rights.CanonicalRoot(root)
		if !ok {
			return public.Approval{}, &broker.Error{Kind: broker.KindBadRequest, Op: "approve", Field: "roots",
				Msg: fmt.Sprintf("root %q is not an existing absolute directory", root), Hint: "give absolute directories on the daemon's machine"}
		}
		rule.Roots = append(rule.Roots, canon)
	}
	if err := broker.CheckRights(rights.Rights{rule}); err != nil {
		return public.Approval{}, err
	}
	if err := within(c, rule); err != nil {
		return public.Approval{}, err
	}
	return public.Approval{Approver: c.Name, Rights: rights.Rights{rule}, TTL: ttl}, nil
}

func (s *server) approved(w http.ResponseWriter, p public.Pending, err error, denied bool) error {
	if err != nil {
		return &broker.Error{Kind: broker.KindNotFound, Op: "approve", Field: "code", Msg: err.Error(),
			Hint: "type the code exactly as the client's sign-in page shows it, within ten minutes"}
	}
	s.log.Info("public face sign-in decided", "client", p.Client, "name", p.ClientName, "redirect", p.RedirectHost, "denied", denied)
	writeJSON(w, http.StatusOK, wire.PublicApproved{Client: p.Client, ClientName: p.ClientName, RedirectHost: p.RedirectHost, Resource: p.Resource, Denied: denied})
	return nil
}
