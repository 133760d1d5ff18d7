package daemon

import (
	"encoding/json"
	"fmt"
	"os"
	"syscall"
	"time"

	"mcpx.dev/mcpx/api/mcp"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/pool"
	"mcpx.dev/mcpx/pool/execid"
)

// The upgrade in place (`mcpx daemon upgrade`, SIGUSR2): the daemon stops
// accepting but keeps its listening sockets open (callers arriving now
// wait in the kernel's backlog, none is refused), drains its calls,
// writes the handoff state file and re-executes itself (execve: the same
// pid, so its children stay its children and its subreaper role holds)
// with the listeners' and the children's descriptors kept open. The new
// image finds the state through EnvHandoff, serves the same sockets and
// adopts every child whose definition is unchanged (pool.Pool.Adopt).

// EnvHandoff names the handoff state file to the re-executed daemon.
const EnvHandoff = "MCPX_HANDOFF"

// HandoffFile is the handoff state file's name in the state directory:
// written 0600, atomically, just before the exec; read and removed by the
// new image at start.
const HandoffFile = "handoff.json"

// Handoff is the handoff state: what one image of the daemon tells the
// next.
type Handoff struct {
	Generation int       `json:"generation"` // the generation that wrote it
	Version    string    `json:"version"`    // its version
	Binary     string    `json:"binary"`     // its binary's identity (package pool/execid)
	Started    time.Time `json:"started"`    // when the first generation started
	Requested  time.Time `json:"requested"`  // when the upgrade was asked for
	Token      string    `json:"token"`      // the bearer token: TCP callers keep theirs
	// UpgradeError says why the binary asked for did not run: the running
	// one was executed again instead.
	UpgradeError string              `json:"upgradeError,omitempty"`
	Listeners    []HandedListener    `json:"listeners"`
	Conns        []HandedConn        `json:"conns,omitempty"` // idle keep-alive connections (handconns.go)
	Broker       broker.HandoffState `json:"broker"`
	// MCP are the MCP endpoint's sessions (mcp.Server.Handoff).
	MCP []mcp.SessionState `json:"mcp,omitempty"`
	// Webhooks is where the webhooks' deliveries stand; nil from an image
	// that did not hand it over (the next image's webhooks then begin a
	// run of their own).
	Webhooks *WebhookHandoff `json:"webhooks,omitempty"`
}

// HandedListener is one listening socket kept open across the exec.
type HandedListener struct {
	Network string `json:"network"` // "unix" or "tcp"
	Addr    string `json:"addr"`
	FD      int    `json:"fd"`
}

// TakeHandoff reads and removes the handoff state named by EnvHandoff, and
// unsets it (the daemon's children must not see it). nil, nil when the
// daemon was not re-executed.
func TakeHandoff(getenv func(string) string) (*Handoff, error) {
	path := getenv(EnvHandoff)
	if path == "" {
		return nil, nil
	}
	os.Unsetenv(EnvHandoff)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the handoff state: %w", err)
	}
	os.Remove(path)
	var h Handoff
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("reading the handoff state %s: %w", path, err)
	}
	// The listeners' and connections' descriptors crossed the exec open;
	// close-on-exec again before anything is started (the watchdog
	// daemon.New starts would hold the listening socket after this
	// daemon's death, and the next daemon would find it served).
	for _, l := range h.Listeners {
		syscall.CloseOnExec(l.FD)
	}
	for _, c := range h.Conns {
		syscall.CloseOnExec(c.FD)
	}
	return &h, nil
}

// SelfBinary is the identity of the binary this process runs (the image,
// even if its file was replaced or removed since).
func SelfBinary() string {
	return execid.Of("/proc/self/exe", execid.Options{}).Value
}

// claimHandoff takes over what h hands over: the children, before the orphan
// reaper looks (pool.ClaimHandoff).
func claimHandoff(h *Handoff) {
	if h != nil {
		pool.ClaimHandoff(h.Broker.Pool)
	}
}

// adoptChildren puts h's children back in the broker's pool and records
// the upgrade event.
func (d *Daemon) adoptChildren(h *Handoff, version string) {
	u := broker.Upgrade{FromVersion: h.Version, ToVersion: version, FromBinary: h.Binary, ToBinary: SelfBinary(), Generation: h.Generation + 1}
	res := d.Broker.Adopt(h.Broker, u)
	d.Log.Info("upgraded in place", "generation", u.Generation, "from", u.FromVersion, "to", u.ToVersion,
		"fromBinary", u.FromBinary, "toBinary", u.ToBinary, "adopted", len(res.Adopted), "replaced", len(res.Replaced),
		"switch", time.Since(h.Requested).Round(time.Millisecond), "upgradeError", h.UpgradeError)
}

// adoptSurvivors puts back the children a killed predecessor kept (config
// pool.survive), and logs what it did.
func (d *Daemon) adoptSurvivors() {
	res := d.Broker.AdoptSurvivors()
	if len(res.Adopted)+len(res.Replaced) > 0 {
		d.Log.Info("adopted the children of a killed daemon", "adopted", res.Adopted, "replaced", res.Replaced)
	}
}
