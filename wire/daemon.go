package wire

import "time"

// The daemon's own files in its state directory. Both are written at start
// with mode 0600 (readable by the daemon's user only) and removed at a clean
// shutdown.
const (
	// RecordFile is the daemon record (a DaemonRecord, JSON): how programs
	// that cannot speak to a unix socket (fetch() in node, deno and bun)
	// find the daemon's loopback TCP address and its token.
	RecordFile = "daemon.json"
	// TokenFile holds the bearer token alone, for shell use:
	// curl -H "Authorization: Bearer $(cat ~/.local/state/mcpx/token)" …
	TokenFile = "token"
	// LogFile is where a daemon started on demand by a client writes its log.
	LogFile = "daemon.log"
)

// HeaderAuthorization carries the bearer token on TCP:
// "Authorization: Bearer <token>". Unix-socket callers need none: the
// kernel tells the daemon who they are.
const HeaderAuthorization = "Authorization"

// DaemonInfo describes the running daemon: in /v1/whoami for its owner, in
// the daemon record, and in the header of `mcpx status`.
type DaemonInfo struct {
	Pid     int       `json:"pid"`
	Version string    `json:"version"`
	Socket  string    `json:"socket"`            // the unix socket path
	Address string    `json:"address,omitempty"` // loopback TCP host:port; absent when TCP is off
	Config  string    `json:"config"`            // the config file; "" for the built-in demo server
	State   string    `json:"stateDir"`          // the state directory (record, token, log)
	Started time.Time `json:"started"`
	// Generation counts the daemon's images: 1 when started, one more
	// after each upgrade (`mcpx daemon upgrade`: the same pid re-executed,
	// its children adopted).
	Generation int `json:"generation"`
	// UpgradeError is why the last upgrade did not run the binary asked
	// for (the daemon re-executed the binary it was running instead);
	// absent when it did.
	UpgradeError string `json:"upgradeError,omitempty"`
}

// DaemonRecord is the RecordFile document: the daemon's description plus
// what a TCP caller needs to reach it.
type DaemonRecord struct {
	DaemonInfo
	URL       string `json:"url,omitempty"` // "http://" + Address; absent when TCP is off
	Token     string `json:"token"`         // the bearer token for URL
	TokenFile string `json:"tokenFile"`     // the path of TokenFile, which holds the same token
}

// Reloaded is the answer of POST /v1/daemon/reload: the config now in force.
type Reloaded struct {
	Config  string `json:"config"` // the file read; "" for the built-in demo server
	Servers int    `json:"servers"`
}

// Upgrading is the answer of POST /v1/daemon/upgrade: the upgrade has
// begun. The daemon drains its calls, then re-executes itself as Binary;
// a caller waits for /v1/whoami to show a Generation past this one.
type Upgrading struct {
	Generation int    `json:"generation"` // the generation being replaced
	Binary     string `json:"binary"`     // the binary the daemon is re-executing
}

// QueryBinary is POST /v1/daemon/upgrade's binary to run (absolute; absent
// = the one running).
const QueryBinary = "binary"
