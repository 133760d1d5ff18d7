package wire

import (
	"encoding/json"
	"time"

	"mcpx.dev/mcpx/auth/rights"
)

// The JSON documents of the routes (Route.Response). Struct field order is
// the order of the members on the wire. A json.RawMessage member passed on
// from a child carries an `mcp` tag naming its MCP schema type (as the MCP
// specification's schema.ts spells it), "[]" first for an array of them;
// the OpenAPI generator types the member by it.

// Health is the /healthz document.
type Health struct {
	Status  string `json:"status"` // "ok"
	Version string `json:"version"`
}

// Whoami is the /v1/whoami document.
type Whoami struct {
	Caller  Caller      `json:"caller"`
	Context DeclaredCtx `json:"context"`
	Version string      `json:"version"`
	// Daemon describes the daemon to its owner (unix-socket callers of its
	// uid, TCP callers with its token); absent for anyone else.
	Daemon *DaemonInfo `json:"daemon,omitempty"`
	// Node is the daemon's tailnet node, to every caller; absent when the
	// daemon is not on a tailnet (serve --tailnet).
	Node *NodeInfo `json:"node,omitempty"`
}

// NodeInfo describes the daemon's node on the tailnet.
type NodeInfo struct {
	Name    string   `json:"name"`    // the node's short name ("sandbox")
	DNSName string   `json:"dnsName"` // its MagicDNS name ("sandbox.example.ts.net")
	IPs     []string `json:"ips"`     // its tailnet addresses, IPv4 first
	// TLS is true when the API is also served over HTTPS on :443 (the
	// tailnet issued the node a certificate); plain HTTP on :80 always.
	TLS bool `json:"tls"`
}

// Caller is the authenticated caller as the broker sees it.
type Caller struct {
	Name  string `json:"name"`          // login name, node name or "local:uid"
	Via   string `json:"via"`           // ViaUnix, ViaTCPLoopback, …
	Uid   int    `json:"uid,omitempty"` // unix callers
	Local bool   `json:"local"`         // same machine (unix socket): Mcpx-Pid is trusted
	Owner bool   `json:"owner"`         // the daemon's own user: sees private detail
	// Admin: the caller may stop instances, manage sessions and tokens (a
	// rule of its rights says admin).
	Admin bool `json:"admin"`
	// Rights are the caller's rules as its grant or token has them, each
	// checked whole: a call is allowed when one rule allows its server,
	// its cwd and its scope together. In a rule an absent list has no
	// limit and [] allows nothing (package rights).
	Rights rights.Rights `json:"rights"`
}

// DeclaredCtx is the caller context as the broker received it from the
// headers (after dropping what it does not trust, such as a remote pid).
type DeclaredCtx struct {
	Cwd           string `json:"cwd,omitempty"`
	Session       string `json:"session,omitempty"`
	ParentSession string `json:"parentSession,omitempty"`
	Lease         string `json:"lease,omitempty"`
	Pid           int    `json:"pid,omitempty"`
}

// ServerList is the /v1/servers document.
type ServerList struct {
	Servers []Server `json:"servers"`
}

// Server describes one configured server (/v1/servers/{server}).
type Server struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Transport   string   `json:"transport"` // "stdio", "http", or an adapter's kind ("openapi", "cli")
	Scope       string   `json:"scope"`     // the scope kind: "global", "worktree", "cwd", …
	Sharing     string   `json:"sharing"`
	Max         int      `json:"max"`
	Instances   int      `json:"instances"` // running now
	// ToolTags are tags per tool name, beside Tags (which every tool has).
	ToolTags map[string][]string `json:"toolTags,omitempty"`
	// Prelude is the config's text put before the server's declarations
	// (GET /v1/types): how to use its tools where their descriptions do
	// not say.
	Prelude string `json:"prelude,omitempty"`
}

// ServerTools is the /v1/servers/{server}/tools document.
type ServerTools struct {
	Server string `json:"server"`
	// Tools is the child's list as it sent it: a JSON array of MCP Tool
	// objects, untagged.
	Tools json.RawMessage `json:"tools" mcp:"[]Tool"`
	// Instructions are the instructions of the same child's initialize
	// result (how to use the server's tools); absent when it sent none.
	Instructions string `json:"instructions,omitempty"`
}

// ResourceList is the /v1/servers/{server}/resources document.
type ResourceList struct {
	// Resources is the child's list: a JSON array of MCP Resource objects.
	Resources json.RawMessage `json:"resources" mcp:"[]Resource"`
	Server    string          `json:"server"`
}

// PromptList is the /v1/servers/{server}/prompts document.
type PromptList struct {
	// Prompts is the child's list: a JSON array of MCP Prompt objects.
	Prompts json.RawMessage `json:"prompts" mcp:"[]Prompt"`
	Server  string          `json:"server"`
}

// ToolList is the /v1/tools document: every server's tools, each an MCP Tool
// object with a "server" member added (see TagServer), and a problem for
// each server whose tools could not be listed. The mcp tag "ServerTool"
// names that shape: an MCP Tool with a string "server" member.
//
// With ?q= (a search), Tools are the hits, best first, Hits says what each
// scored, in the same order, and Match how the terms matched: "all" (every
// term matched each hit), "any" (no tool matched them all) or "typo"
// (nothing matched; hits are within two edits of a term).
type ToolList struct {
	Tools  []json.RawMessage `json:"tools" mcp:"ServerTool"`
	Match  string            `json:"match,omitempty"`
	Hits   []ToolHit         `json:"hits,omitempty"`
	Errors []*Problem        `json:"errors,omitempty"`
}

// ToolHit is what one tool found by a search scored, term by term.
type ToolHit struct {
	Server string      `json:"server"`
	Name   string      `json:"name"`
	Score  int         `json:"score"`
	Terms  []TermScore `json:"terms"`
}

// TermScore is one search term's contribution to a hit.
type TermScore struct {
	Term   string      `json:"term"`
	Points int         `json:"points"`
	Parts  []ScorePart `json:"parts,omitempty"`
}

// ScorePart is one reason a term matched: the field (name, tag, path,
// server, description), how (exact, prefix, contains, word, typo), and the
// points it earned.
type ScorePart struct {
	Field  string `json:"field"`
	Why    string `json:"why"`
	Points int    `json:"points"`
}

// Catalog is the /v1/catalog document: every server with its tool count,
// then the one-line signatures a budget of tokens (four characters each)
// let in, taken round-robin across servers.
type Catalog struct {
	Budget     int                `json:"budget"`
	Used       int                `json:"used"`
	Servers    []CatalogServer    `json:"servers"`
	Signatures []CatalogSignature `json:"signatures"`
	Errors     []*Problem         `json:"errors,omitempty"`
}

// CatalogServer is a server of a catalog: its tool count, and how many of
// their signatures are shown.
type CatalogServer struct {
	Server string `json:"server"`
	Tools  int    `json:"tools"`
	Shown  int    `json:"shown"`
}

// CatalogSignature is one tool's one-line signature, and its cost in tokens.
type CatalogSignature struct {
	Server    string `json:"server"`
	Name      string `json:"name"`
	Signature string `json:"signature"`
	Cost      int    `json:"cost"`
}

// DefaultCatalogBudget is the budget of /v1/catalog without ?budget=, in
// tokens.
const DefaultCatalogBudget = 1000

// InstanceList is the /v1/instances document.
type InstanceList struct {
	Instances []Instance `json:"instances"`
	Stats     *Stats     `json:"stats,omitempty"` // pool-wide counters since the daemon started
	// Records is the call log's writer: its losses are counted here.
	Records *RecordsStatus `json:"records,omitempty"`
}

// Stats are the pool's counters since the daemon started.
type Stats struct {
	Spawns        int64 `json:"spawns"`        // children started (initialize answered)
	Restarts      int64 `json:"restarts"`      // starts of an instance that had run a child before
	StartFailures int64 `json:"startFailures"` // starts that failed or timed out
	Crashes       int64 `json:"crashes"`       // running children that exited unexpectedly
	Wedged        int64 `json:"wedged"`        // running children found silent (no answer to a ping) and killed
	Evictions     int64 `json:"evictions"`     // idle instances stopped to make room for another key
	Reaps         int64 `json:"reaps"`         // instances stopped for idleness or because their owner went away
	Exhausted     int64 `json:"exhausted"`     // calls refused because the pool stayed full (503)
	Queued        int64 `json:"queued"`        // callers waiting for room right now
	Waits         int64 `json:"waits"`         // callers that had to wait in line for room
}

// Instance is one pooled child, as status shows it.
type Instance struct {
	ID        string `json:"id"`
	Server    string `json:"server"`
	Key       string `json:"key"`  // the scope key: "global", "worktree:/src/app", …
	Root      string `json:"root"` // the instance root; "" for rootless instances
	Cwd       string `json:"cwd,omitempty"`
	CwdSource string `json:"cwdSource"` // "config", "scope" or "daemon"
	Transport string `json:"transport"` // "stdio", "http", or an adapter's kind ("openapi", "cli")
	Pid       int    `json:"pid,omitempty"`
	// State is "starting", "ready", "backoff", "wedged", "stopping" or "stopped".
	State    string    `json:"state"`
	Protocol string    `json:"protocolVersion,omitempty"`
	Created  time.Time `json:"created"` // when the instance was made; restarts keep it
	// Index is ${mcpx.index}: the lowest index from 0 free among the
	// server's live instances when this one was made.
	Index int `json:"index"`
	// Alloc are the instance's ${mcpx.alloc.*} ports by name and TmpDir
	// its ${mcpx.tmpdir}, once its first start made them.
	Alloc  map[string]int `json:"alloc,omitempty"`
	TmpDir string         `json:"tmpdir,omitempty"`
	// Exec is the identity of a stdio child's executable: sha256:<16 hex>
	// (its content, a script's directory, or a large file's stat), or
	// missing:<command>; a new identity replaces the child.
	Exec         string    `json:"exec,omitempty"`
	Started      time.Time `json:"started"`
	LastUsed     time.Time `json:"lastUsed"`
	Calls        int64     `json:"calls"`
	InFlight     int       `json:"inFlight"`
	Restarts     int       `json:"restarts"`
	BackoffUntil time.Time `json:"backoffUntil,omitzero"`
	LastError    string    `json:"lastError,omitempty"`
	// StderrTail is the child's last stderr lines when its last start or
	// run failed; the daemon's owner only.
	StderrTail string `json:"stderrTail,omitempty"`
	Degraded   string `json:"degraded,omitempty"`
	// Program says where the child's program came from when it is not a
	// plain command: a nix: spec (what it locked to, the store path it
	// runs) and an execution environment other than the host.
	Program *InstanceProgram `json:"program,omitempty"`
	// Sandbox says what confines the instance's children; absent when
	// they are not confined (docs/sandbox.md).
	Sandbox *InstanceSandbox `json:"sandbox,omitempty"`
}

// InstanceProgram is what an instance's nix: command and execution
// environment resolved to.
type InstanceProgram struct {
	Spec        string `json:"spec,omitempty"`      // the command as configured: nix:<flakeref>#<attr>
	Rev         string `json:"rev,omitempty"`       // the locked git revision ("" for path: refs and dirty trees)
	NarHash     string `json:"narHash,omitempty"`   // the locked content hash
	StorePath   string `json:"storePath,omitempty"` // the package the child runs from
	Pinned      bool   `json:"pinned,omitempty"`    // the spec names a rev or narHash: no refresh moves it
	Environment string `json:"environment,omitempty"`
	// EnvironmentRev is the environment's locked rev or narHash (flake:),
	// or sha256:<hash of the file> (shell:).
	EnvironmentRev string `json:"environmentRev,omitempty"`
}
