package pool

import (
	"time"

	"mcpx.dev/mcpx/pool/execid"
	"mcpx.dev/mcpx/pool/mcpclient"
)

// Defaults for the zero values of Server and Options. They are stated here
// only: the config fills its defaults from these, so that `mcpx config show`
// prints what the pool will do.
const (
	DefaultMax          = 4                // Server.Max: instances of one server
	DefaultMaxInstances = 64               // Options.MaxInstances: instances of all servers
	DefaultIdleTimeout  = 5 * time.Minute  // Options.IdleTimeout
	DefaultReapInterval = 30 * time.Second // Options.ReapInterval
	DefaultStartTimeout = 30 * time.Second // Options.StartTimeout: spawn + initialize
	// Options.WaitTimeout: how long a call waits in line for an instance
	// when the pool is full, before it is refused (the API's 503).
	DefaultWaitTimeout = 10 * time.Second
	// Options.ProbeTimeout: how long a child whose call timed out has to
	// answer a ping before it is declared wedged and killed.
	DefaultProbeTimeout = 5 * time.Second
	// Options.MaxMessageBytes: the largest message a child may send (64 MiB).
	DefaultMaxMessageBytes = mcpclient.DefaultMaxMessageBytes
	// Options.RootsWait: how long a new child is given to ask roots/list.
	DefaultRootsWait = mcpclient.DefaultRootsWait
	// Options.ExecWatch: how often running children's executables are
	// stat'ed for a change.
	DefaultExecWatch = 10 * time.Second
	// Options.ExecHashMax: the largest executable hashed by content.
	DefaultExecHashMax = execid.DefaultHashMax
)
