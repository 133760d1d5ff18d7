package broker

import (
	"cmp"
	"context"
	"encoding/json"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/mcp/jsonrpc"
	"mcpx.dev/mcpx/pool"
)

// ServerInfo describes a configured server to callers.
type ServerInfo struct {
	Name        string
	Description string
	Tags        []string
	Transport   string // "stdio" or "http"
	Scope       config.ScopeKind
	Sharing     config.Sharing
	Max         int
	Instances   int // running now
	// ToolTags and Prelude are the config's: tags per tool beside Tags, and
	// the text put before the server's declarations (config.Server).
	ToolTags map[string][]string
	Prelude  string
}

// ToolList is a server's tools and instructions, as the child of one scope
// gives them.
type ToolList struct {
	// Tools is the child's tools/list, all pages joined: a JSON array of
	// MCP Tool objects, as the child sent them.
	Tools json.RawMessage
	// Instructions are the instructions of the child's initialize result
	// (how to use the server's tools); "" when it sent none.
	Instructions string
}

// Servers lists the configured servers c may use, sorted by name.
func (b *Broker) Servers(c Caller) []ServerInfo {
	cfg := b.currentConfig()
	counts := map[string]int{}
	for _, in := range b.pool.Instances() {
		counts[in.Server]++
	}
	out := make([]ServerInfo, 0, len(cfg.Servers))
	for _, name := range sortedNames(cfg.Servers) {
		if c.Rights.MayUse(name) {
			out = append(out, serverInfo(name, cfg.Servers[name], counts[name]))
		}
	}
	return out
}

// ServersAt lists the servers r.Caller is served at r.Context.Cwd, sorted
// by name: the owner's config with, for the owner and callers with a rule
// that says projectConfig, the project files of the cwd's config chain in
// that rule's roots merged in (see docs/project-config.md). A project file that does not load fails with
// KindBadRequest naming it.
func (b *Broker) ServersAt(r Request) ([]ServerInfo, error) {
	sv, err := b.servedTo(r.Caller, r.Context.Cwd)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, in := range b.pool.Instances() {
		counts[in.Server]++
	}
	out := make([]ServerInfo, 0, len(sv.servers))
	for _, name := range sortedNames(sv.servers) {
		if r.Caller.Rights.MayUse(name) {
			out = append(out, serverInfo(name, sv.servers[name], counts[sv.poolName(name)]))
		}
	}
	return out, nil
}

// ServerAt describes r.Server as r.Caller is served it at r.Context.Cwd
// (ServersAt); KindNotFound if there is none by that name it may use.
func (b *Broker) ServerAt(r Request) (ServerInfo, error) {
	all, err := b.ServersAt(r)
	if err != nil {
		return ServerInfo{}, err
	}
	for _, si := range all {
		if si.Name == r.Server {
			return si, nil
		}
	}
	sv, err := b.servedTo(r.Caller, r.Context.Cwd)
	if err != nil {
		return ServerInfo{}, err
	}
	if sv.servers[r.Server] != nil {
		return ServerInfo{}, authorize(sv.servers, r.Caller, rights.Use{Server: r.Server})
	}
	return ServerInfo{}, b.notFoundIn(sv, r)
}

func serverInfo(name string, s *config.Server, n int) ServerInfo {
	tr := "stdio"
	switch {
	case s.URL != "":
		tr = "http"
	case s.OpenAPI != nil:
		tr = "openapi"
	case s.CLI != nil:
		tr = "cli"
	}
	return ServerInfo{Name: name, Description: s.Description, Tags: s.Tags, Transport: tr,
		Scope: s.Scope, Sharing: cmp.Or(s.Sharing, config.SharingShared), Max: cmp.Or(s.Max, pool.DefaultMax), Instances: n,
		ToolTags: s.ToolTags, Prelude: s.Prelude}
}

// Server describes one server; KindNotFound if there is none by that name
// that c may use.
func (b *Broker) Server(name string, c Caller) (ServerInfo, error) {
	s, err := b.lookup(name, c)
	if err == nil {
		// To c, a server it may not use does not exist.
		err = authorize(b.currentConfig().Servers, c, rights.Use{Server: name})
	}
	if err != nil {
		return ServerInfo{}, err
	}
	n := 0
	for _, in := range b.pool.Instances() {
		if in.Server == name {
			n++
		}
	}
	return serverInfo(name, s, n), nil
}

// Tools returns the server's tools as the child listed them (all pages
// joined), those r.Caller's rights allow (ToolList): a JSON array of MCP
// Tool objects.
func (b *Broker) Tools(ctx context.Context, r Request) (json.RawMessage, error) {
	l, err := b.ToolList(ctx, r)
	return l.Tools, err
}

// ToolList returns the server's tools and instructions from the child in
// r's scope (one child answers both). When that scope has no running child
// and the pool's schema cache knows what the child would run (after a
// daemon restart, an idle reap), the cached listing answers and no child
// starts; a call starts one (pool.ToolListing says how fresh it is).
//
// The tools are those r.Caller's rights allow at r's use of the server
// (rights.Rights.Tools: one rule allows the server, the cwd, the scope
// and the tool together); the others are left out, as CallTool answers
// them as tools that do not exist. Under the server's pinTools, the tools
// whose definitions are not approved are left out too (pins.go). Every
// listing of tools (REST, /mcp, OpenAPI, the generated clients, catalog
// and search) is built from this one.
func (b *Broker) ToolList(ctx context.Context, r Request) (ToolList, error) {
	res, err := b.resolve(r)
	if err != nil {
		return ToolList{}, err
	}
	visible := r.Caller.Rights.Tools(res.use)
	if l, ok := b.pool.ToolListing(ctx, res.target); ok {
		return ToolList{Tools: visibleTools(b.observeTools(res, l.Tools), visible), Instructions: l.Instructions}, nil
	}
	var out ToolList
	err = b.run(ctx, res, r.Server, "list tools", func(ctx context.Context, s *client.Session) (err error) {
		out.Tools, err = s.Tools(ctx)
		out.Instructions = s.Instructions()
		return err
	})
	if err == nil {
		out.Tools = visibleTools(b.observeTools(res, out.Tools), visible)
	}
	return out, err
}

// Resources returns the server's resources: a JSON array of MCP Resource objects.
func (b *Broker) Resources(ctx context.Context, r Request) (json.RawMessage, error) {
	return b.list(ctx, r, jsonrpc.MethodResourcesList, "list resources", (*client.Session).Resources)
}

// Prompts returns the server's prompts: a JSON array of MCP Prompt objects.
func (b *Broker) Prompts(ctx context.Context, r Request) (json.RawMessage, error) {
	return b.list(ctx, r, jsonrpc.MethodPromptsList, "list prompts", (*client.Session).Prompts)
}

// list is r's list by method: from the schema cache when no instance of
// its target runs (pool.CachedList), as ToolList answers tools, so a
// listing after a restart starts no child; else from the child.
func (b *Broker) list(ctx context.Context, r Request, method, op string, get func(*client.Session, context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	res, err := b.resolve(r)
	if err != nil {
		return nil, err
	}
	if l, ok := b.pool.CachedList(ctx, res.target, method); ok {
		return l, nil
	}
	var out json.RawMessage
	err = b.run(ctx, res, r.Server, op, func(ctx context.Context, s *client.Session) (err error) {
		out, err = get(s, ctx)
		return err
	})
	return out, err
}
