package pool

import (
	"time"

	"mcpx.dev/mcpx/internal/defaults"
	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/pool/execid"
)

// Defaults for the zero values of Server and Options. Those the config file
// sets are stated in package mcpx.dev/mcpx/internal/defaults, which the
// config reads too, so that `mcpx config show` prints what the pool will do
// without linking the pool.
const (
	DefaultMax          = defaults.Max          // Server.Max: instances of one server
	DefaultMaxInstances = defaults.MaxInstances // Options.MaxInstances: instances of all servers
	DefaultIdleTimeout  = defaults.IdleTimeout  // Options.IdleTimeout
	DefaultReapInterval = defaults.ReapInterval // Options.ReapInterval
	DefaultStartTimeout = defaults.StartTimeout // Options.StartTimeout: spawn + initialize
	// Options.WaitTimeout: how long a call waits in line for an instance
	// when the pool is full, before it is refused (the API's 503).
	DefaultWaitTimeout = defaults.WaitTimeout
	// Options.ProbeTimeout: how long a child whose call timed out has to
	// answer a ping before it is declared wedged and killed.
	DefaultProbeTimeout = 5 * time.Second
	// Options.MaxMessageBytes: the largest message a child may send (64 MiB).
	DefaultMaxMessageBytes = client.DefaultMaxMessageBytes
	// Options.RootsWait: how long a new child is given to ask roots/list.
	DefaultRootsWait = client.DefaultRootsWait
	// Options.ExecWatch: how often running children's executables are
	// stat'ed for a change.
	DefaultExecWatch = defaults.ExecWatch
	// Options.ExecHashMax: the largest executable hashed by content.
	DefaultExecHashMax = execid.DefaultHashMax
)
