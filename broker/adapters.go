package broker

import (
	"context"
	"errors"
	"maps"

	"mcpx.dev/mcpx/adapter"
	"mcpx.dev/mcpx/adapter/clitools"
	"mcpx.dev/mcpx/broker/config"
	"mcpx.dev/mcpx/pool"
)

// adapterOf is the pool's Opener for an adapter server (openapi, cli); nil
// for a child. A definition its adapter refuses (a schema that does not
// compile) becomes an Opener whose every start fails with that message:
// that server fails, the others run.
func adapterOf(name string, s *config.Server) adapter.Opener {
	switch {
	case s.OpenAPI != nil:
		// TODO(issue 23): openapitools.New(...) (helper OPENAPI's package).
		return failedOpener{kind: "openapi", err: errors.New("this mcpx has no openapi adapter yet")}
	case s.CLI != nil:
		op, err := clitools.New(cliConfig(name, s.CLI))
		return orFailed("cli", op, err)
	}
	return nil
}

// cliConfig is a cli block as clitools takes it. Its processes run through
// pool.RunTracked, so that the daemon's orphan reaper leaves their exit
// status to the call.
func cliConfig(name string, c *config.CLI) clitools.Config {
	tools := make(map[string]clitools.Tool, len(c.Tools))
	for tool, t := range maps.All(c.Tools) {
		if t != nil {
			tools[tool] = clitools.Tool{Description: t.Description, Args: t.Args, Input: t.Input, Output: t.Output}
		}
	}
	return clitools.Config{Server: name, Tools: tools, Run: pool.RunTracked}
}

// orFailed is op, or when err is set an Opener that fails with it.
func orFailed(kind string, op adapter.Opener, err error) adapter.Opener {
	if err != nil {
		return failedOpener{kind: kind, err: err}
	}
	return op
}

// failedOpener is an adapter whose definition its package refused.
type failedOpener struct {
	kind string
	err  error
}

func (f failedOpener) Open(context.Context, adapter.Scope) (adapter.Namespace, error) {
	return nil, f.err
}
func (f failedOpener) Identity() string { return "refused: " + f.err.Error() }
func (f failedOpener) Kind() string     { return f.kind }
