package pool

import (
	"context"
	"fmt"
	"reflect"

	"mcpx.dev/mcpx/adapter"
	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/pool/proc"
)

// An adapter (Server.Adapter) takes a child's place: its instance is made,
// shared, capped, reaped and stopped as a child's is, and its session runs
// over adapter.Transport, an in-process MCP server over the namespace the
// Opener makes for the instance. What differs is only how it starts
// (openAdapter) and that it has no process of its own: the processes its
// calls start carry the generation's mark, so they are killed with it,
// and for a confined instance each is confined as its child would be
// (confineAdapter).

// openAdapter opens inst's namespace, bounded by ctx (the start timeout),
// in the scope a stdio child of the definition would get: its root, the
// cwd SpawnCwd chose, the environment its env rules make, marked as the
// generation g's.
func (p *Pool) openAdapter(ctx context.Context, inst *instance, sp spawnSpec, g *generation) (client.Transport, error) {
	if err := checkDir(sp); err != nil {
		return nil, err
	}
	g.mark = proc.NewMark()
	scope := adapter.Scope{
		Server: inst.def.Name, Instance: inst.id, Root: inst.root, Cwd: sp.cwd,
		Env: sp.environ(p.opts.Env, proc.MarkEnv+"="+g.mark),
	}
	if inst.sandbox != nil {
		p.confineAdapter(inst, sp, g.mark, &scope)
	}
	ns, err := inst.def.Adapter.Open(ctx, scope)
	if err != nil {
		return nil, fmt.Errorf("opening the %s adapter: %w", inst.def.Adapter.Kind(), err)
	}
	return adapter.NewTransport(ns, adapter.Info{Name: inst.def.Name, Version: p.opts.ClientVersion}), nil
}

// transportOf is how status names def's transport: "stdio", "http", or the
// adapter's kind.
func transportOf(def *Server) string {
	switch {
	case def.Adapter != nil:
		return def.Adapter.Kind()
	case def.URL != "":
		return "http"
	}
	return "stdio"
}

// adapterIdentity names def's adapter for the schema cache; "" for a child.
func adapterIdentity(def *Server) string {
	if def.Adapter == nil {
		return ""
	}
	return def.Adapter.Kind() + ":" + def.Adapter.Identity()
}

// sameDef reports whether two definitions run the same thing: equal fields,
// and adapters of the same kind and Identity (an Opener's own value may
// hold what cannot be compared, a function).
func sameDef(a, b *Server) bool {
	if adapterIdentity(a) != adapterIdentity(b) {
		return false
	}
	ac, bc := *a, *b
	ac.Adapter, bc.Adapter = nil, nil
	return reflect.DeepEqual(&ac, &bc)
}
