package wire

import "time"

// ToolPins is GET /v1/pins: the tool pins of each server definition
// (docs/trust.md, "Tool pins"), sorted by server.
type ToolPins struct {
	Servers []ServerPins `json:"servers"`
}

// ServerPins are one server definition's pins. Server is the daemon's
// name of the definition: the server's name, or name@hash for a project
// file's definition.
type ServerPins struct {
	Server   string `json:"server"`
	PinTools bool   `json:"pinTools"` // tools not approved are withheld from callers
	// Unapproved counts the tools whose state is not "approved".
	Unapproved int       `json:"unapproved"`
	Tools      []ToolPin `json:"tools"`
}

// The states of a pinned tool (ToolPin.State).
const (
	PinApproved = "approved" // listed as approved
	PinChanged  = "changed"  // listed otherwise than approved
	PinNew      = "new"      // never approved: added after the first listing, or flagged at it
	PinRemoved  = "removed"  // approved once, no longer listed
)

// ToolPin is one tool's pin: its hash (of name, title, description,
// input and output schemas and annotations) as last listed and as last
// approved.
type ToolPin struct {
	Name         string    `json:"name"`
	State        string    `json:"state"` // one of the Pin* states
	Hash         string    `json:"hash"`
	ApprovedHash string    `json:"approvedHash,omitempty"`
	Flags        []string  `json:"flags,omitempty"` // what reads as instructions to the model: hidden-tag, sensitive-file, ...
	Changed      time.Time `json:"changed,omitzero"`
	Withheld     bool      `json:"withheld,omitempty"` // under pinTools: callers neither see nor call it
	// Diff is how the listed definition differs from the approved one:
	// lines "-" approved, "+" listed; the daemon's owner only.
	Diff string `json:"diff,omitempty"`
}

// ApproveTools is the body of POST /v1/servers/{server}/pins/approve.
type ApproveTools struct {
	// Tool is the tool to approve; "" = every tool of the server.
	Tool string `json:"tool,omitempty"`
	// Hash, if set, must be the tool's hash as last listed: an approval
	// of what the approver saw, refused if the tool changed since.
	Hash string `json:"hash,omitempty"`
}

// ApprovedTools answers POST /v1/servers/{server}/pins/approve.
type ApprovedTools struct {
	Approved []string   `json:"approved"` // the tools approved (or whose removal was acknowledged)
	Server   ServerPins `json:"server"`   // the definition's pins after
}
