package broker

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"mcpx.dev/mcpx/internal/atomicfile"
	"mcpx.dev/mcpx/internal/promptscan"
	"mcpx.dev/mcpx/pool"
)

// Tool pins guard against a server changing a tool after its user came
// to trust it (a "rug pull"): the first listing of a server definition is
// pinned, each tool by a hash of what a model and a person read of it —
// its name, title, description, input and output schemas and annotations
// (the title is what clients show in place of the name; annotations such
// as readOnlyHint decide whether a client asks before a call, so changing
// them changes what was trusted). _meta, icons and execution are not
// pinned: they say nothing to the model. A later listing that adds,
// changes or removes a tool is an EventToolChanged with a diff for the
// owner; a tool whose text reads as instructions to the model (package
// promptscan) is flagged and never approved by being first. With a
// server's pinTools, a tool whose listed definition is not an approved
// one is withheld from every listing and call until the owner approves
// it (Broker.ApproveTools).
//
// Pins are keyed by the pool's name of the definition: a server's name
// for the owner's config, name@hash for a project file's (projectPoolName),
// so two repositories defining a server by the same name never share
// pins, and the owner's server keeps its pins across edits of its entry
// (a changed command that changes the tools is a change to approve). A
// definition's instances in different roots share its pins. They are one
// JSON file in the state directory (PinsFile), replaced atomically, 0600.

// PinsFile is the name of the tool pins' file in the state directory.
const PinsFile = "tool-pins.json"

// Bounds of the pins file.
const (
	pinsVersion     = 1
	maxPinServers   = 1024    // definitions kept; the least recently listed go first
	maxApproved     = 8       // approved hashes kept per tool
	maxPinnedDefLen = 1 << 16 // a definition longer is pinned by its hash alone (no diff)
)

// The changes of a tool-changed event (Event.Change).
const (
	ToolAdded   = "added"
	ToolChanged = "changed"
	ToolRemoved = "removed"
)

type pinsDoc struct {
	Version int                    `json:"version"`
	Servers map[string]*serverPins `json:"servers"`
}

// serverPins are one definition's pins.
type serverPins struct {
	Tools map[string]*toolPin `json:"tools"`
	// PinTools is the definition's pinTools as last seen by a listing.
	PinTools bool      `json:"pinTools,omitempty"`
	Seen     time.Time `json:"seen"`
}

// toolPin is one tool's pin.
type toolPin struct {
	Hash        string          `json:"hash"`                  // as last listed
	Def         json.RawMessage `json:"def,omitempty"`         // the pinned part as last listed
	Flags       []string        `json:"flags,omitempty"`       // promptscan's rules Def breaks
	Approved    []string        `json:"approved,omitempty"`    // approved hashes, newest last
	ApprovedDef json.RawMessage `json:"approvedDef,omitempty"` // the pinned part as last approved
	Removed     bool            `json:"removed,omitempty"`     // the last listing did not have it
	Changed     time.Time       `json:"changed,omitzero"`      // when Hash or Removed last changed
}

func (t *toolPin) approved(hash string) bool { return slices.Contains(t.Approved, hash) }

// approve makes the tool's listed definition an approved one.
func (t *toolPin) approve() {
	if !t.approved(t.Hash) {
		t.Approved = append(t.Approved, t.Hash)
		if len(t.Approved) > maxApproved {
			t.Approved = t.Approved[len(t.Approved)-maxApproved:]
		}
	}
	t.ApprovedDef = t.Def
}

// lastListing is a listing observed, read: the next one with the same
// bytes is not read again (every listing of tools passes observe).
type lastListing struct {
	sum   [32]byte
	tools []pinnedTool // read only
}

// pins is the broker's tool pins. Safe for concurrent use.
type pins struct {
	path string // "" = in memory only
	log  *slog.Logger
	now  func() time.Time

	mu   sync.Mutex
	doc  pinsDoc                // guarded by mu
	last map[string]lastListing // guarded by mu; per server, the last listing observed
	gen  uint64                 // guarded by mu; bumped at each change

	wmu     sync.Mutex // serializes writes
	written uint64     // guarded by wmu; the generation on disk
}

func loadPins(path string, log *slog.Logger, now func() time.Time) *pins {
	if now == nil {
		now = time.Now
	}
	p := &pins{path: path, log: log, now: now, doc: pinsDoc{Version: pinsVersion, Servers: map[string]*serverPins{}},
		last: map[string]lastListing{}}
	if path == "" {
		return p
	}
	var doc pinsDoc
	found, err := atomicfile.ReadJSON(path, &doc)
	if !found {
		return p
	}
	if err != nil || doc.Version != pinsVersion {
		// Safer to say so loudly than to keep going quietly: every
		// definition is pinned anew by its next listing.
		log.Warn("ignoring the tool pins file; servers' tools are pinned again at their next listing", "path", path, "err", err, "version", doc.Version)
		return p
	}
	for k, s := range doc.Servers {
		if s != nil && s.Tools != nil {
			p.doc.Servers[k] = s
		}
	}
	return p
}

// pinnedTool is one tool of a listing, as pins read it.
type pinnedTool struct {
	name  string
	raw   json.RawMessage // as the child sent it
	def   []byte          // the pinned part, canonical
	hash  string
	flags []string
}

// readTools reads a tools/list array; tools without a name are left out
// (no caller can call them).
func readTools(list json.RawMessage) []pinnedTool {
	var raws []json.RawMessage
	json.Unmarshal(list, &raws) //nolint:errcheck // not an array: no tools
	out := make([]pinnedTool, 0, len(raws))
	for _, raw := range raws {
		if t, ok := readTool(raw); ok {
			out = append(out, t)
		}
	}
	return out
}

// pinnedMembers are the members of a Tool a pin covers.
var pinnedMembers = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations"}

func readTool(raw json.RawMessage) (pinnedTool, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers hash as the child wrote them
	var m map[string]any
	if dec.Decode(&m) != nil {
		return pinnedTool{}, false
	}
	name, _ := m["name"].(string)
	if name == "" {
		return pinnedTool{}, false
	}
	part := map[string]any{}
	var flags []string
	for _, k := range pinnedMembers {
		if v, ok := m[k]; ok {
			part[k] = v
			flags = promptscan.Merge(flags, scanValue(v)...)
		}
	}
	def := canonical(part)
	sum := sha256.Sum256(def)
	return pinnedTool{name: name, raw: raw, def: def, hash: hex.EncodeToString(sum[:16]), flags: flags}, true
}

// canonical is v as JSON with sorted keys and no HTML escaping.
func canonical(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(v) //nolint:errcheck // decoded from JSON: it encodes
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// scanValue is promptscan's rules broken by any string in v, keys too.
func scanValue(v any) []string {
	var out []string
	switch v := v.(type) {
	case string:
		out = promptscan.Scan(v)
	case []any:
		for _, e := range v {
			out = promptscan.Merge(out, scanValue(e)...)
		}
	case map[string]any:
		for k, e := range v {
			out = promptscan.Merge(out, promptscan.Scan(k)...)
			out = promptscan.Merge(out, scanValue(e)...)
		}
	}
	return out
}

// observe pins server's listing: the first of a definition is pinned
// (each tool approved unless flagged); a later one that adds, changes or
// removes a tool emits an EventToolChanged per tool; a first-seen tool
// that is flagged, an EventToolFlagged. It returns the listing's tools.
// pinTools is the definition's setting, when the caller knows it (nil:
// the pool's hook, which does not).
func (p *pins) observe(server string, list json.RawMessage, pinTools *bool, emit func(pool.Event)) []pinnedTool {
	sum := sha256.Sum256(list)
	p.mu.Lock()
	sp, last := p.doc.Servers[server], p.last[server]
	if sp != nil && last.sum == sum && (pinTools == nil || *pinTools == sp.PinTools) {
		p.mu.Unlock()
		return last.tools
	}
	p.mu.Unlock()
	tools := readTools(list) // outside the lock: a large listing takes a while
	p.mu.Lock()
	sp = p.doc.Servers[server]
	p.last[server] = lastListing{sum, tools}
	now := p.now()
	var evs []pool.Event
	dirty := sp == nil || (pinTools != nil && *pinTools != sp.PinTools)
	if sp == nil {
		sp = &serverPins{Tools: map[string]*toolPin{}}
		p.doc.Servers[server] = sp
		for _, t := range tools {
			tp := &toolPin{Hash: t.hash, Def: keepDef(t.def), Flags: t.flags, Changed: now}
			if len(t.flags) == 0 {
				tp.approve()
			} else {
				evs = append(evs, pool.Event{Kind: pool.EventToolFlagged, Server: server, Tool: t.name,
					NewHash: t.hash, Flags: t.flags, Diff: toolDiff(nil, t.def)})
			}
			sp.Tools[t.name] = tp
		}
		p.evictLocked()
	} else {
		evs = sp.update(server, tools, now)
	}
	if pinTools != nil {
		sp.PinTools = *pinTools
	}
	sp.Seen = now // on disk with the next change
	if !dirty && len(evs) == 0 {
		p.mu.Unlock()
		return tools
	}
	p.gen++
	b, gen := p.marshalLocked()
	p.mu.Unlock()
	for _, e := range evs {
		emit(e)
	}
	p.write(b, gen)
	return tools
}

// update applies a later listing to sp, returning the events it makes.
func (sp *serverPins) update(server string, tools []pinnedTool, now time.Time) []pool.Event {
	var evs []pool.Event
	seen := make(map[string]bool, len(tools))
	for _, t := range tools {
		seen[t.name] = true
		tp := sp.Tools[t.name]
		if tp != nil && tp.Hash == t.hash && !tp.Removed {
			continue
		}
		ev := pool.Event{Kind: pool.EventToolChanged, Server: server, Tool: t.name, Change: ToolAdded,
			NewHash: t.hash, Flags: t.flags}
		if tp == nil {
			tp = &toolPin{}
			sp.Tools[t.name] = tp
			ev.Diff = toolDiff(nil, t.def)
		} else {
			if !tp.Removed {
				ev.Change, ev.OldHash = ToolChanged, tp.Hash
			}
			ev.Diff = toolDiff(tp.Def, t.def)
		}
		tp.Hash, tp.Def, tp.Flags, tp.Removed, tp.Changed = t.hash, keepDef(t.def), t.flags, false, now
		evs = append(evs, ev)
	}
	for _, name := range sortedKeys(sp.Tools) {
		tp := sp.Tools[name]
		if seen[name] || tp.Removed {
			continue
		}
		evs = append(evs, pool.Event{Kind: pool.EventToolChanged, Server: server, Tool: name, Change: ToolRemoved,
			OldHash: tp.Hash, Diff: toolDiff(tp.Def, nil)})
		if len(tp.Approved) == 0 {
			delete(sp.Tools, name) // never approved: nothing to remember
			continue
		}
		tp.Removed, tp.Changed = true, now
	}
	return evs
}

func keepDef(def []byte) json.RawMessage {
	if len(def) > maxPinnedDefLen {
		return nil
	}
	return def
}

// evictLocked drops the least recently listed definitions beyond the bound.
func (p *pins) evictLocked() {
	for len(p.doc.Servers) > maxPinServers {
		var oldest string
		for k, s := range p.doc.Servers {
			if oldest == "" || s.Seen.Before(p.doc.Servers[oldest].Seen) {
				oldest = k
			}
		}
		delete(p.doc.Servers, oldest)
		delete(p.last, oldest)
	}
}

// withheld reports whether t is withheld from callers of server under
// pinTools: its listed definition is not an approved one.
func (p *pins) withheld(server string, t pinnedTool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	sp := p.doc.Servers[server]
	if sp == nil {
		return true // never observed: deny by default
	}
	tp := sp.Tools[t.name]
	return tp == nil || !tp.approved(t.hash)
}

// filter is list without the tools withheld under pinTools.
func (p *pins) filter(server string, list json.RawMessage, tools []pinnedTool) json.RawMessage {
	out := make([]json.RawMessage, 0, len(tools))
	n := 0
	for _, t := range tools {
		if p.withheld(server, t) {
			continue
		}
		out = append(out, t.raw)
		n++
	}
	if n == len(tools) {
		return list
	}
	b, _ := json.Marshal(out) // each element was decoded as JSON: it marshals
	return b
}

// approve approves server's tool ("" = every tool) as last listed; with
// hash set, only if that is the hash last listed. A removed tool's pin is
// dropped. It returns the tools approved; errPinNotFound or
// errPinMoved (hash no longer listed) otherwise.
func (p *pins) approve(server, tool, hash string) ([]string, error) {
	p.mu.Lock()
	sp := p.doc.Servers[server]
	if sp == nil {
		p.mu.Unlock()
		return nil, errPinNotFound
	}
	names := []string{tool}
	if tool == "" {
		names = sortedKeys(sp.Tools)
	}
	var done []string
	for _, name := range names {
		tp := sp.Tools[name]
		switch {
		case tp == nil:
			p.mu.Unlock()
			return nil, errPinNotFound
		case hash != "" && tp.Hash != hash:
			p.mu.Unlock()
			return nil, errPinMoved
		case tp.Removed:
			delete(sp.Tools, name)
		case tp.approved(tp.Hash) && bytes.Equal(tp.ApprovedDef, tp.Def):
			continue
		default:
			tp.approve()
		}
		done = append(done, name)
	}
	p.gen++
	b, gen := p.marshalLocked()
	p.mu.Unlock()
	p.write(b, gen)
	return done, nil
}

var (
	errPinNotFound = errors.New("no such pin")
	errPinMoved    = errors.New("the tool changed again")
)

func (p *pins) marshalLocked() ([]byte, uint64) {
	if p.path == "" {
		return nil, p.gen
	}
	b, _ := json.Marshal(p.doc) // plain data: it marshals
	return b, p.gen
}

// write puts generation gen's b on disk unless a later one is there.
func (p *pins) write(b []byte, gen uint64) {
	if p.path == "" {
		return
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if gen <= p.written {
		return
	}
	if err := atomicfile.Write(p.path, b, 0o600); err != nil {
		p.log.Warn("could not save the tool pins; a restarted daemon pins servers' tools again", "path", p.path, "err", err)
		return
	}
	p.written = gen
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
