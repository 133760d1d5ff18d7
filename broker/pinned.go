package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"mcpx.dev/mcpx/internal/suggest"
	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/mcp/jsonrpc"
	"mcpx.dev/mcpx/pool"
)

// What the broker hands out of its tool pins (pins.go): the states of a
// definition's tools, for `mcpx tools pins`, `mcpx status` and the
// dashboard; and the owner's approval.

// The states of a pinned tool (ToolPin.State).
const (
	PinApproved = "approved" // listed as approved
	PinChanged  = "changed"  // listed otherwise than approved
	PinNew      = "new"      // listed, never approved: added after the first listing, or flagged
	PinRemoved  = "removed"  // approved once, no longer listed
)

// ServerPins are one server definition's tool pins. Server is the pool's
// name of the definition: the server's, or name@hash for a project
// file's.
type ServerPins struct {
	Server   string
	PinTools bool // the definition's pinTools, as last listed
	Tools    []ToolPin
}

// ToolPin is one tool's pin.
type ToolPin struct {
	Name  string
	State string // PinApproved, PinChanged, PinNew or PinRemoved
	// Hash is the tool's as last listed, ApprovedHash as last approved
	// ("" if never).
	Hash, ApprovedHash string
	Flags              []string // promptscan's rules its listed definition breaks
	Changed            time.Time
	// Withheld: under pinTools, callers neither see nor call it.
	Withheld bool
	// Diff is how the listed definition differs from the approved one
	// (toolDiff); the owner's to see.
	Diff string
}

// Unapproved counts the tools not in state PinApproved.
func (s ServerPins) Unapproved() int {
	n := 0
	for _, t := range s.Tools {
		if t.State != PinApproved {
			n++
		}
	}
	return n
}

// emitEvent adds a broker event to the pool's lifecycle events.
func (b *Broker) emitEvent(e pool.Event) { b.pool.Events().Add(e) }

// observeTools pins a listing of res's server and returns what callers
// are shown of it: under pinTools, the approved tools only.
func (b *Broker) observeTools(res resolved, list json.RawMessage) json.RawMessage {
	tools := b.pins.observe(res.target.Server, list, &res.def.PinTools, b.emitEvent)
	if !res.def.PinTools {
		return list
	}
	return b.pins.filter(res.target.Server, list, tools)
}

// checkPinned refuses a call of a tool withheld under res's pinTools.
// The session's listing (which sess.Tool read) is observed first, so a
// call that comes before any listing is judged as that listing is.
func (b *Broker) checkPinned(ctx context.Context, sess *client.Session, res resolved, r Request, tool string, def json.RawMessage) error {
	if !res.def.PinTools {
		return nil
	}
	if list, err := sess.Tools(ctx); err == nil {
		b.pins.observe(res.target.Server, list, &res.def.PinTools, b.emitEvent)
	}
	t, ok := readTool(def)
	if ok && !b.pins.withheld(res.target.Server, t) {
		return nil
	}
	return &Error{Kind: KindNotFound, Op: "call", Server: r.Server,
		Msg:  fmt.Sprintf("tool %q is withheld: the server has pinTools on and this definition of the tool is not approved", tool),
		Hint: fmt.Sprintf("the daemon's owner reviews it with `mcpx tools pins %s` and approves it with `mcpx tools approve %s.%s`", r.Server, r.Server, tool)}
}

// mayManagePins: the pins are the owner's and admins'.
func mayManagePins(c Caller, op string) error {
	if c.Owner || c.Rights.Admin() {
		return nil
	}
	return &Error{Kind: KindForbidden, Op: op, Msg: "tool pins are the daemon owner's and admins'"}
}

// ToolPins lists the pins of every server definition (server = "") or
// of the pool definition named server, sorted by server. Admin only.
// Diff is filled for the owner only.
func (b *Broker) ToolPins(c Caller, server string) ([]ServerPins, error) {
	if err := mayManagePins(c, "list tool pins"); err != nil {
		return nil, err
	}
	cfg := b.currentConfig()
	b.pins.mu.Lock()
	defer b.pins.mu.Unlock()
	var out []ServerPins
	for _, name := range sortedKeys(b.pins.doc.Servers) {
		if server != "" && name != server {
			continue
		}
		sp := b.pins.doc.Servers[name]
		pinTools := sp.PinTools
		if s := cfg.Servers[name]; s != nil {
			pinTools = s.PinTools
		}
		out = append(out, serverPinsOf(name, sp, pinTools, c.Owner))
	}
	return out, nil
}

func serverPinsOf(name string, sp *serverPins, pinTools, diffs bool) ServerPins {
	out := ServerPins{Server: name, PinTools: pinTools, Tools: []ToolPin{}}
	for _, tn := range sortedKeys(sp.Tools) {
		tp := sp.Tools[tn]
		t := ToolPin{Name: tn, State: PinApproved, Hash: tp.Hash, Flags: tp.Flags, Changed: tp.Changed}
		if n := len(tp.Approved); n > 0 {
			t.ApprovedHash = tp.Approved[n-1]
		}
		switch {
		case tp.Removed:
			t.State = PinRemoved
		case len(tp.Approved) == 0:
			t.State = PinNew
		case !tp.approved(tp.Hash):
			// A hash approved once but not last (another root's
			// definition, say) is approved: the pin allows it.
			t.State = PinChanged
		}
		t.Withheld = pinTools && (t.State == PinNew || t.State == PinChanged)
		if diffs && t.State != PinApproved {
			t.Diff = toolDiff(tp.ApprovedDef, tp.Def)
		}
		out.Tools = append(out.Tools, t)
	}
	return out
}

// ApproveTools approves r.Server's tool ("" = all its tools) as last
// listed, for the definition r.Caller is served at r.Context.Cwd (a
// project file's, there); the owner may also name a pool definition
// (name@hash) as ToolPins lists it. hash, if set, must be the tool's hash
// as last listed (else KindBadRequest: it changed again; look again).
// It returns the definition's pins after and the tools it approved.
// Admin only.
func (b *Broker) ApproveTools(r Request, tool, hash string) (ServerPins, []string, error) {
	const op = "approve tools"
	if err := mayManagePins(r.Caller, op); err != nil {
		return ServerPins{}, nil, err
	}
	server := r.Server
	res, err := b.resolve(r)
	switch {
	case err == nil:
		server = res.target.Server
	case r.Caller.Owner && b.pinned(server):
	default:
		return ServerPins{}, nil, err
	}
	done, err := b.pins.approve(server, tool, hash)
	switch {
	case errors.Is(err, errPinNotFound) && tool != "":
		hint := fmt.Sprintf("`mcpx tools pins %s` lists its pinned tools", r.Server)
		if s := suggest.Closest(tool, b.pinnedTools(server)); s != "" {
			hint = fmt.Sprintf("did you mean %q? %s", s, hint)
		}
		return ServerPins{}, nil, &Error{Kind: KindNotFound, Op: op, Server: r.Server, Field: "tool", Msg: fmt.Sprintf("no pinned tool %q", tool), Hint: hint}
	case errors.Is(err, errPinNotFound):
		return ServerPins{}, nil, &Error{Kind: KindNotFound, Op: op, Server: r.Server, Msg: "no tools of this server are pinned yet",
			Hint: fmt.Sprintf("its tools are pinned at their first listing: `mcpx tools %s`", r.Server)}
	case errors.Is(err, errPinMoved):
		return ServerPins{}, nil, &Error{Kind: KindBadRequest, Op: op, Server: r.Server, Field: "hash", Msg: "the tool's definition changed again since the hash given",
			Hint: fmt.Sprintf("review it again with `mcpx tools pins %s`", r.Server)}
	}
	b.log.Info("tool pins approved", "server", server, "tools", done)
	if len(done) > 0 {
		b.toolsChanged(server)
	}
	all, _ := b.ToolPins(r.Caller, server)
	if len(all) == 0 {
		return ServerPins{Server: server, Tools: []ToolPin{}}, done, nil
	}
	return all[0], done, nil
}

// toolsChanged tells the MCP clients of server's instances that its tool
// list changed (an approval serves a tool again), as the child would.
func (b *Broker) toolsChanged(server string) {
	for _, in := range b.pool.Instances() {
		if in.Server == server {
			b.notify(Notice{Server: in.Server, Key: in.Key, Method: jsonrpc.MethodToolsListChanged})
		}
	}
}

func (b *Broker) pinned(server string) bool {
	b.pins.mu.Lock()
	defer b.pins.mu.Unlock()
	return b.pins.doc.Servers[server] != nil
}

func (b *Broker) pinnedTools(server string) []string {
	b.pins.mu.Lock()
	defer b.pins.mu.Unlock()
	if sp := b.pins.doc.Servers[server]; sp != nil {
		return sortedKeys(sp.Tools)
	}
	return nil
}
