package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/suggest"
	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/observe/tracing"
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
	// docs/input.md). nil = they are
	// refused: the child gets a decline.
	OnInput InputHandler
	// OnAdmitted, if set, is called once a tool call has passed its rate
	// limits and concurrency slot, before it reaches the pool: a streamed
	// call opens its stream then, so that a refusal is still a plain 429.
	OnAdmitted func()
	// OnTarget, if set, is told where a tool call runs once it has
	// reached its instance (before the child is asked; again if the call
	// is sent again): the daemon's context of the call.
	OnTarget func(CallTarget)
	// NoImplicitTask refuses a plain call of a tool whose taskSupport is
	// required (an error wrapping ErrTaskRequired) instead of running it
	// as a task and waiting: a client of the tasks extension is told to
	// ask for a task.
	NoImplicitTask bool
	// Capabilities, if set, are what the caller can answer: a stateless
	// child's request declares no more (CallerCapabilities). nil = mcpx's
	// own.
	Capabilities *CallerCapabilities
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

// notFoundIn is notFound among the servers r's caller is served at its
// cwd; to the owner, the hint also names the project files on that cwd's
// chain that are skipped, and why (a server one defines is not served).
func (b *Broker) notFoundIn(sv *served, r Request) error {
	err := notFoundError(sv.servers, r.Server, r.Caller)
	if note := b.skippedProjectFiles(r.Caller, r.Context.Cwd); note != "" {
		err.Hint += "; " + note
	}
	return err
}

func notFoundAmong(servers map[string]*config.Server, name string, c Caller) error {
	return notFoundError(servers, name, c)
}

func notFoundError(servers map[string]*config.Server, name string, c Caller) *Error {
	names := slices.DeleteFunc(sortedNames(servers), func(n string) bool { return !c.Rights.MayUse(n) })
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
	res, err := b.resolve(r)
	return res.target, err
}

// resolved is a request resolved and authorized: the definition of its
// server and the instance it lands on. Each request is resolved once (the
// cwd statted, the lease checked, the session noted, a call id minted).
type resolved struct {
	def    *config.Server
	target pool.Target
	config string // the config file that defines the server; "" = the built-in one
	// use is what was authorized: the server, the canonical cwd, the
	// scope kind and, for a call the rights allow, the tool.
	use rights.Use
	// hidden is set for a call of a tool the caller's rights do not allow
	// with the rest of use: to the caller, a tool that does not exist.
	hidden bool
}

// resolve finds r's server among those r.Caller is served at its cwd,
// authorizes the use (authorize: a server the caller may not use is not
// found, like one that does not exist, before anything else is looked at)
// and resolves its scope to a pool target.
func (b *Broker) resolve(r Request) (resolved, error) { return b.resolveTool(r, "") }

// resolveTool is resolve for a call of tool ("" = no call): once server,
// cwd and scope are authorized, one rule must allow the tool with them
// (rights.Use.Tool), or the result is hidden (a tool that does not exist;
// the caller finds out only as it would for one). The instance root is
// then checked with the tool too.
func (b *Broker) resolveTool(r Request, tool string) (resolved, error) {
	return b.resolveIn(context.Background(), r, tool)
}

// resolveIn is resolveTool, traced under ctx's span: an authorize span,
// then a scope span (tracing).
func (b *Broker) resolveIn(ctx context.Context, r Request, tool string) (_ resolved, err error) {
	sp := tracing.NoSpan
	if tracing.Enabled() {
		_, sp = tracing.StartChild(ctx, "mcpx.authorize")
		sp.SetAttributes(attribute.String("mcpx.server", r.Server), attribute.String("mcpx.caller.kind", r.Caller.Via),
			attribute.Bool("mcpx.caller.owner", r.Caller.Owner))
		if tool != "" {
			sp.SetAttributes(attribute.String("mcpx.tool", tool))
		}
		defer func() { tracing.Fail(sp, err); sp.End() }()
	}
	c := r.Caller
	sv, err := b.servedTo(c, r.Context.Cwd)
	if err != nil {
		return resolved{}, err
	}
	def := sv.servers[r.Server]
	if def == nil {
		return resolved{}, b.notFoundIn(sv, r)
	}
	use := rights.Use{Server: r.Server}
	if err := authorize(sv.servers, c, use); err != nil {
		return resolved{}, err
	}
	cc := r.Context
	if !c.Local {
		cc.Pid = 0 // only a unix-socket peer's pid means anything here
	}
	if cc.Cwd != "" {
		cwd, err := b.scope.CanonicalCwd(cc.Cwd)
		if err != nil {
			return resolved{}, err
		}
		cc.Cwd, use.Dir = cwd, cwd
		if err := authorize(sv.servers, c, use); err != nil {
			return resolved{}, err
		}
	}
	if cc.CallID == "" {
		cc.CallID = newCallID()
	}
	kind, err := scopeFor(r.Server, def, cc.Scope, cc.ScopeFrom, b.currentConfig().Pool.ScopePolicy)
	if err != nil {
		return resolved{}, err
	}
	// The caller's rights bound the scope the call will use: the
	// configured one, or the override the server's policy allowed; one
	// rule must allow it with the server and the cwd.
	use.Scope = string(kind)
	if err := authorize(sv.servers, c, use); err != nil {
		return resolved{}, err
	}
	if err := b.leases.checkDeclared(cc.Lease, c); err != nil {
		return resolved{}, err
	}
	hidden := false
	if tool != "" {
		withTool := use
		withTool.Tool = tool
		if hidden = !c.Rights.Allows(withTool); !hidden {
			use = withTool
		}
	}
	if sp.IsRecording() {
		sp.End()
		_, sp = tracing.StartChild(ctx, "mcpx.scope")
		sp.SetAttributes(attribute.String("mcpx.scope.kind", string(kind)))
	}
	rs := b.scope.Resolve(kind, cc)
	rs.Key = callerKey(rs.Key, c)
	// A rule that allows the root with the server, the scope (and the
	// tool) allows the cwd below it too.
	if rs.Root != "" && !c.Rights.Allows(rights.Use{Server: r.Server, Dir: rs.Root, Scope: use.Scope, Tool: use.Tool}) {
		// Git discovery walks up: the repo or worktree may begin above the
		// directories this caller may use. Never hand it a child rooted
		// there; fall back to its own cwd, which was checked above.
		rs = b.scope.Resolve(config.ScopeCwd, cc)
		rs.Degraded = "the repository root lies outside the caller's allowed roots"
	}
	if def.OffersRoots() && wholeDisk(rs.Root) {
		rs.Degraded = strings.TrimPrefix(rs.Degraded+"; "+wholeDiskNote(rs.Root), "; ")
	}
	b.noteSession(rs.Key, c, cc)
	poolName := sv.poolName(r.Server)
	if poolName != r.Server {
		b.ensureDef(poolName, sv.sources[r.Server].File, def)
	}
	return resolved{def: def, use: use, hidden: hidden, config: sv.sources[r.Server].File, target: pool.Target{
		Server: poolName, Key: rs.Key, Root: rs.Root, Cwd: cc.Cwd, Degraded: rs.Degraded,
		Ephemeral: strings.HasPrefix(rs.Key, "call:"),
		Sandbox:   EffectiveSandbox(def, b.currentConfig().Defaults, c, rs.Root),
		Account:   b.signInAccount(r.Server, c),
	}}, nil
}

// wholeDisk reports whether an instance root is / or the home directory: a
// filesystem server offered it as its root sees the whole disk (or every
// file of the user), which a caller whose cwd is / or ~ rarely means.
func wholeDisk(root string) bool {
	if root == "/" {
		return true
	}
	home, err := os.UserHomeDir()
	if err != nil || root == "" {
		return false
	}
	if h, err := filepath.EvalSymlinks(home); err == nil {
		home = h
	}
	return root == home
}

// wholeDiskNote is the degraded note of such an instance; it names no path
// (remote callers read degraded notes).
func wholeDiskNote(root string) string {
	what := "the home directory"
	if root == "/" {
		what = "/, the whole disk"
	}
	return fmt.Sprintf("the instance root is %s (the caller's cwd): a filesystem server offered it as its MCP root sees every file below it; call from a project directory, or give the server \"roots\": false", what)
}

// CallTarget is the daemon's context of one tool call: the server and
// tool, the scope kind and key it was resolved to, the instance it ran on
// and, for the owner only, the config file that defines the server.
type CallTarget struct {
	Server, Tool, Scope, Key, Instance string
	Config                             string // "" unless the caller is the owner
}

// callTarget is the CallTarget of a call of tool as r asks, resolved to
// res, on sess.
func (b *Broker) callTarget(r Request, res resolved, tool string, sess *client.Session) CallTarget {
	t := CallTarget{Server: r.Server, Tool: tool, Scope: res.use.Scope, Key: res.target.Key, Instance: b.pool.InstanceOf(sess)}
	if r.Caller.Owner {
		t.Config = res.config
	}
	return t
}
