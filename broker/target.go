package broker

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"mcpx.dev/mcpx/broker/config"
	"mcpx.dev/mcpx/internal/suggest"
	"mcpx.dev/mcpx/pool"
)

// Request is one call-like request: who, where, and which server.
type Request struct {
	Caller  Caller
	Context CallContext
	Server  string
	// CheckTool, if set, is given the Tool object the child lists under
	// the called name before CallTool calls it; an error it returns is
	// returned instead of calling (a generated client that knows the
	// tool's schemas under another hash gets KindStaleClient this way).
	// nil = no check.
	CheckTool func(tool json.RawMessage) error
	// OnInput answers the child's requests for input (elicitation,
	// sampling) attributed to this call (InputHandler; see
	// "Requests for input" in docs/architecture.md). nil = they are
	// refused: the child gets a decline.
	OnInput InputHandler
}

// lookup finds a server by name. Not finding it, it names the servers c may
// use: a caller restricted to some servers does not learn the others.
func (b *Broker) lookup(name string, c Caller) (*config.Server, error) {
	cfg := b.currentConfig()
	if s := cfg.Servers[name]; s != nil {
		return s, nil
	}
	return nil, b.notFound(name, c)
}

// notFound is the error for a server c cannot see, naming those it can.
func (b *Broker) notFound(name string, c Caller) error {
	return notFoundAmong(b.currentConfig().Servers, name, c)
}

// notFoundIn is notFound among the servers c is served at its cwd.
func (b *Broker) notFoundIn(sv *served, name string, c Caller) error {
	return notFoundAmong(sv.servers, name, c)
}

func notFoundAmong(servers map[string]*config.Server, name string, c Caller) error {
	names := slices.DeleteFunc(sortedNames(servers), func(n string) bool { return !c.MayUse(n) })
	hint := "configured servers: " + strings.Join(names, ", ")
	if s := suggest.Closest(name, names); s != "" {
		hint = fmt.Sprintf("did you mean %q? %s", s, hint)
	}
	if len(names) == 0 {
		hint = "this caller may use no server"
	}
	return &Error{Kind: KindNotFound, Op: "find server", Server: name, Msg: "no such server", Hint: hint}
}

// Target resolves where r would land, without calling anything.
func (b *Broker) Target(r Request) (pool.Target, error) {
	_, t, err := b.target(r)
	return t, err
}

func (b *Broker) target(r Request) (*config.Server, pool.Target, error) {
	sv, err := b.servedTo(r.Caller, r.Context.Cwd)
	if err != nil {
		return nil, pool.Target{}, err
	}
	def := sv.servers[r.Server]
	if def == nil {
		return nil, pool.Target{}, b.notFoundIn(sv, r.Server, r.Caller)
	}
	c := r.Caller
	if !c.MayUse(r.Server) {
		return nil, pool.Target{}, &Error{Kind: KindForbidden, Op: "authorize", Server: r.Server, Msg: "this caller may not use this server"}
	}
	cc := r.Context
	if !c.Local {
		cc.Pid = 0 // only a unix-socket peer's pid means anything here
	}
	if cc.Cwd != "" {
		cwd, err := b.scope.CanonicalCwd(cc.Cwd)
		if err != nil {
			return nil, pool.Target{}, err
		}
		if !underAny(cwd, c.Roots) {
			return nil, pool.Target{}, &Error{Kind: KindForbidden, Op: "authorize", Server: r.Server, Field: "Mcpx-Cwd",
				Msg: "the declared cwd is outside the roots this caller may use"}
		}
		cc.Cwd = cwd
	}
	if cc.CallID == "" {
		cc.CallID = newCallID()
	}
	kind, err := scopeFor(r.Server, def, cc.Scope)
	if err != nil {
		return nil, pool.Target{}, err
	}
	// The caller's rights bound the scope the call will use: the
	// configured one, or the override the server's policy allowed.
	if err := c.checkScope(r.Server, kind); err != nil {
		return nil, pool.Target{}, err
	}
	if err := b.leases.checkDeclared(cc.Lease, c); err != nil {
		return nil, pool.Target{}, err
	}
	rs := b.scope.Resolve(kind, cc)
	rs.Key = callerKey(rs.Key, c)
	if rs.Root != "" && !underAny(rs.Root, c.Roots) {
		// Git discovery walks up: the repo or worktree may begin above the
		// directories this caller may use. Never hand it a child rooted
		// there; fall back to its own cwd, which was checked above.
		rs = b.scope.Resolve(config.ScopeCwd, cc)
		rs.Degraded = "the repository root lies outside the caller's allowed roots"
	}
	b.noteSession(rs.Key, c, cc.Cwd)
	poolName := sv.poolName(r.Server)
	if poolName != r.Server {
		b.ensureDef(poolName, sv.sources[r.Server].File, def)
	}
	return def, pool.Target{
		Server: poolName, Key: rs.Key, Root: rs.Root, Cwd: cc.Cwd, Degraded: rs.Degraded,
		Ephemeral: strings.HasPrefix(rs.Key, "call:"),
	}, nil
}
