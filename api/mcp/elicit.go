package mcp

import "encoding/json"

// URL-mode elicitation (spec 2025-11-25, client/elicitation): a child's
// elicitation/create with mode "url" goes to the client only if it declared
// elicitation.url, and the child's later notifications/elicitation/complete
// reaches only the session that was asked.

// urlElicitation reports whether elicitation/create params are URL mode,
// and their elicitationId.
func urlElicitation(params json.RawMessage) (id string, url bool) {
	var p struct {
		Mode          string `json:"mode"`
		ElicitationID string `json:"elicitationId"`
	}
	json.Unmarshal(params, &p) //nolint:errcheck // unreadable: form mode, as the default
	return p.ElicitationID, p.Mode == "url"
}

// noteElicited records that the session was asked URL-mode elicitation id.
func (ss *session) noteElicited(id string) {
	if id == "" {
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.elicited == nil {
		ss.elicited = map[string]bool{}
	}
	ss.elicited[id] = true
}

// takeElicited reports whether the session was asked URL-mode elicitation
// id, and forgets it: it completes once.
func (ss *session) takeElicited(id string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ok := ss.elicited[id]
	delete(ss.elicited, id)
	return ok
}
