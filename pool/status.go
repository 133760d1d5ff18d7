package pool

import "time"

// State is an instance's lifecycle state as the API shows it; the pool's
// own states (idle and stopped both show as "stopped") and their allowed
// transitions are in lifecycle.go.
type State string

const (
	StateStarting State = "starting" // spawned, initialize not yet answered
	StateReady    State = "ready"    // serving calls
	StateBackoff  State = "backoff"  // crashed repeatedly; next start not before BackoffUntil
	StateWedged   State = "wedged"   // alive but silent (LastError says how it was found); being killed, the next call starts a new one
	StateStopping State = "stopping" // draining and shutting down
	StateStopped  State = "stopped"  // no child: not started yet, or it exited (the next call starts one; LastError says why)
)

// CwdSource says where a child's working directory came from.
type CwdSource string

const (
	CwdConfig CwdSource = "config" // the server's cwd field (after substitution)
	CwdScope  CwdSource = "scope"  // the instance root
	CwdDaemon CwdSource = "daemon" // neither: the child inherits the daemon's cwd
)

// InstanceStatus is a snapshot of one instance, for status output and the API.
type InstanceStatus struct {
	ID        string
	Server    string
	Key       string // the scope key
	Root      string // the instance root; "" for rootless instances
	Cwd       string
	CwdSource CwdSource
	Transport string // "stdio" or "http"
	Pid       int    // the current stdio child's; 0 without one
	State     State
	Protocol  string    // the MCP protocol version agreed with the child
	Created   time.Time // when the instance was made; restarts keep it
	// Index is ${mcpx.index}: the lowest index free among the server's
	// live instances when this one was made, from 0.
	Index int
	// Alloc are the instance's ${mcpx.alloc.*} ports by name, and TmpDir
	// its ${mcpx.tmpdir}, once its first start made them.
	Alloc  map[string]int
	TmpDir string
	// Exec is the identity of the running stdio child's executable
	// (package execid): sha256:<16 hex>, or missing:<command>.
	Exec         string
	Started      time.Time
	LastUsed     time.Time
	Calls        int64
	InFlight     int
	Restarts     int
	BackoffUntil time.Time
	LastError    string
	// StderrTail is the child's last stderr lines when its last start or
	// run failed (with LastError): the owner's to see, as LastError is.
	StderrTail string
	Degraded   string // why the key is not the requested scope (Target.Degraded)
	// Program is where the running child's program came from, when
	// Options.Resolve said (a nix: spec's lock and store path).
	Program *Program
	// Sandbox is what confines the instance's children; nil when they
	// are not confined.
	Sandbox *SandboxStatus
}

// Program is what Options.Resolve made of a stdio child's command: what
// to exec, the execution environment's variables, and where they came
// from, which status shows per instance. The pool reads only Path and Env.
type Program struct {
	Path string   // what to exec
	Env  []string // KEY=VALUE under the server's own env (proc.Env.Dev)
	// Wrap, if set, is the argv that starts Path (a shell running the
	// environment's hook first): Wrap[0], looked up on the child's PATH,
	// is exec'd with Wrap[1:], then Path and its arguments. The exec
	// identity stays Path's.
	Wrap []string

	Spec        string // the program spec as configured (nix:<ref>#<attr>)
	Rev         string // its locked git revision, if any
	NarHash     string // its locked content hash
	StorePath   string // the package it runs from
	Pinned      bool   // the spec names a rev or hash: no refresh moves it
	Environment string // the execution environment, if not the host
	EnvRev      string // the environment's locked rev, narHash or file hash
	// Isolated: Env's PATH replaces the host's (proc.Env.Isolated), and
	// EnvStorePath is the environment's package, whose store closure a
	// confined child reads.
	Isolated     bool
	EnvStorePath string
}

// Stats are pool-wide counters since the pool was made.
type Stats struct {
	Spawns        int64 // children started (initialize answered)
	Restarts      int64 // starts of an instance that had run a child before
	StartFailures int64 // starts that failed or timed out
	Crashes       int64 // running children that exited unexpectedly
	Wedged        int64 // running children found silent and killed
	Evictions     int64 // idle instances stopped to make room for another key
	Reaps         int64 // instances stopped for idleness or because their owner went away
	Exhausted     int64 // calls refused because the pool stayed full (the API's 503)
	Queued        int64 // callers in line for room right now (a gauge, not a count)
	Waits         int64 // callers that had to wait in line for room (served or not)
}
