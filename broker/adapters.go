package broker

import (
	"context"
	"maps"
	"path/filepath"
	"strings"

	"mcpx.dev/mcpx/adapter"
	"mcpx.dev/mcpx/adapter/cli"
	"mcpx.dev/mcpx/adapter/openapi"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/nixresolve/nixspec"
	"mcpx.dev/mcpx/pool/proc"
)

// adapterOf is the pool's Opener for an adapter server (openapi, cli); nil
// for a child. A definition its adapter refuses (a schema that does not
// compile) becomes an Opener whose every start fails with that message:
// that server fails, the others run.
func (b *Broker) adapterOf(name string, s *config.Server, source string) adapter.Opener {
	switch {
	case s.OpenAPI != nil:
		op, err := openapi.New(b.openAPIConfig(name, s.OpenAPI, source))
		return orFailed("openapi", op, err)
	case s.CLI != nil:
		op, err := cli.New(b.cliConfig(name, s.CLI))
		return orFailed("cli", op, err)
	}
	return nil
}

// cliConfig is a cli block as clitools takes it. Its processes run through
// proc.RunTracked, so that the daemon's orphan reaper leaves their exit
// status to the call. A tool's nix: program is resolved by the daemon's
// resolver, as a nix: command is (built once, cached).
func (b *Broker) cliConfig(name string, c *config.CLI) cli.Config {
	tools := make(map[string]cli.Tool, len(c.Tools))
	for tool, t := range maps.All(c.Tools) {
		if t != nil {
			tools[tool] = cli.Tool{Description: t.Description, Args: t.Args, Input: t.Input, Output: t.Output}
		}
	}
	cfg := cli.Config{Server: name, Tools: tools, Run: proc.RunTracked}
	if nix := b.nix; nix != nil {
		cfg.Resolve = func(ctx context.Context, spec string) (string, error) {
			p, err := nix.Resolve(ctx, spec)
			return p.Path, err
		}
	}
	return cfg
}

// openAPIConfig is an openapi block as openapitools takes it: a relative
// spec is the config file's neighbour, URL documents are cached in the
// state directory, ${env:NAME} reads the daemon's environment.
func (b *Broker) openAPIConfig(name string, o *config.OpenAPI, source string) openapi.Config {
	spec := o.Spec
	if !nixspec.Is(spec) && !strings.Contains(spec, "://") && !filepath.IsAbs(spec) && source != "" {
		spec = filepath.Join(filepath.Dir(source), spec)
	}
	cfg := openapi.Config{Server: name, Spec: spec, BaseURL: o.BaseURL, Headers: o.Headers, Operations: o.Operations}
	if b.stateDir != "" {
		cfg.CacheDir = filepath.Join(b.stateDir, "openapi")
	}
	if nix := b.nix; nix != nil {
		cfg.Resolve = func(ctx context.Context, spec string) (string, error) {
			p, err := nix.Resolve(ctx, spec)
			return p.Path, err
		}
	}
	if c := o.OAuth2; c != nil {
		cfg.OAuth2 = &openapi.OAuth2{ClientID: c.ClientID, ClientSecret: c.ClientSecret, Scopes: c.Scopes, TokenURL: c.TokenURL}
	}
	return cfg
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
