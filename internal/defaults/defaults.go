// Package defaults states, once each, the values that the config file's
// zero settings stand for, where the package that applies them is below
// the broker: the pool, a child's MCP session, an executable's identity,
// the call log and nix resolution.
//
//	const DefaultMax = defaults.Max // package pool: Server.Max's zero
//
// Those packages fill their own zeros from these (pool.DefaultMax is
// defaults.Max), and config names them in its messages and fills
// them in, so that `mcpx config show` prints what will run, without
// linking the pool, the MCP client, the call log or the resolver. Defaults
// the config applies itself (call timeout, argument depth, input wait)
// stay in config. It imports nothing but time and embed.
//
// Document is every default of the config file in one JSON document of the
// config's shape, these and the config's own (`mcpx config --defaults`
// prints it); a test holds it to what a parsed config and the packages
// really fill in, so the two cannot drift.
package defaults

import (
	_ "embed"
	"time"
)

// Document is every default of the config file, as a JSON document of the
// config's shape: "<command server>" and "<url server>" stand for a
// server of either kind. The caller must not modify it.
//
//go:embed defaults.json
var Document []byte

// The pool (package pool): pool.Server and pool.Options, and the config's
// pool section and per-server fields.
const (
	Max          = 4                // Server.Max: instances of one server
	MaxInstances = 64               // Options.MaxInstances: instances of all servers
	IdleTimeout  = 5 * time.Minute  // Options.IdleTimeout
	ReapInterval = 30 * time.Second // Options.ReapInterval
	StartTimeout = 30 * time.Second // Options.StartTimeout: spawn + initialize
	// WaitTimeout is Options.WaitTimeout: how long a call waits in line for
	// an instance when the pool is full, before it is refused (the API's
	// 503).
	WaitTimeout = 10 * time.Second
	// ExecWatch is Options.ExecWatch: how often running children's
	// executables are stat'ed for a change.
	ExecWatch = 10 * time.Second
	// HealthTimeout is how long a health check's ping may go unanswered
	// when the config sets no timeout (at most half the interval).
	HealthTimeout = 5 * time.Second
)

// A child's MCP session (package pool/mcpclient) and its executable's
// identity (package pool/execid): the config's limits section.
const (
	// MaxMessageBytes is the largest message a child may send (64 MiB):
	// room for real results (a file, an image as base64), not for a child
	// that writes without end.
	MaxMessageBytes = 64 << 20
	// RootsWait bounds the wait for a child's start-up roots/list. Two
	// seconds: enough for node to start a server and ask on a loaded
	// machine; a server that never asks pays it once per definition (the
	// pool remembers, across restarts when it has a memo file).
	RootsWait = 2 * time.Second
	// ExecHashMax is the largest executable whose content is hashed
	// (1 MiB); larger ones are identified by their stat.
	ExecHashMax = 1 << 20
)

// The call log (package records): the config's records section.
const (
	RecordsMaxBytes = 16 << 20           // a file is closed at 16 MiB
	RecordsMaxAge   = 7 * 24 * time.Hour // records are kept a week
	RecordsMaxFiles = 8                  // at most 8 files: about 128 MiB
)

// A confined child's limits (package pool/confine) when neither its
// server's "sandbox" nor the defaults' set them: room for gopls on a large
// module (GiBs) and for node's heap, threads counted as processes (the
// pids cgroup counts them), and no CPU-time limit, since RLIMIT_CPU adds
// up over a long-lived server's whole life.
const (
	SandboxMemory    = 4 << 30 // bytes, all its processes together
	SandboxProcesses = 1024    // processes and threads at once
	SandboxOpenFiles = 8192    // per process
)

// NixTimeout bounds one nix resolution (lock, evaluate, build; package
// nixresolve, the config's nix.timeout). A cold build of a real tool can
// take minutes.
const NixTimeout = 120 * time.Second
