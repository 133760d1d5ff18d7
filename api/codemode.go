package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"mcpx.dev/mcpx/api/mcp"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/clientgen"
	"mcpx.dev/mcpx/clientgen/catalog"
	"mcpx.dev/mcpx/scripts"
	"mcpx.dev/mcpx/scripts/runner"
)

// Code mode's tools for the MCP endpoint (mcp.Code; docs/mcp.md,
// "Code mode"): search over the catalog, and run, which runs a snippet as
// `mcpx exec` does, on this machine, as the MCP caller. The script reaches
// the API through a run relay (its own token, on loopback) whose client
// is this handler over an in-memory listener that names every request's
// caller the MCP caller: the script has the caller's rights, no more.

// Search's defaults and bounds.
const (
	searchLimit     = 20
	searchMaxLimit  = 100
	searchBudget    = 2000
	searchMinBudget = 100 // the schema's minimum
	searchMaxBudget = 100000
)

// codeMode implements mcp.Code over s.
type codeMode struct {
	s     *server
	h     http.Handler // the API handler the script's requests reach
	cache string       // the runs' cache: generated clients, each run's directory
}

func (cm *codeMode) Search(ctx context.Context, r broker.Request, query string, limit, budget int) (json.RawMessage, error) {
	limit = min(max(limit, 0), searchMaxLimit)
	if limit == 0 {
		limit = searchLimit
	}
	// Within the schema's bounds: 0 (or less) is the default, and a
	// budget below the schema's minimum is the minimum.
	switch {
	case budget <= 0:
		budget = searchBudget
	default:
		budget = min(max(budget, searchMinBudget), searchMaxBudget)
	}
	tools, errs, err := cm.tools(ctx, r)
	if err != nil {
		return nil, err
	}
	picked := tools
	match := "all"
	if terms := strings.Fields(query); len(terms) > 0 {
		hits, m := catalog.Search(tools, terms, catalog.SearchOptions{})
		match, picked = string(m), make([]catalog.Tool, 0, len(hits))
		for _, h := range hits {
			picked = append(picked, tools[h.Tool])
		}
	}
	// The signatures as the catalog writes them, in the search's order.
	sigs := map[[2]string]string{}
	for _, s := range catalog.New(picked, 1<<30, nil).Signatures {
		sigs[[2]string{s.Server, s.Name}] = s.Text
	}
	type matchDoc struct {
		Server      string `json:"server"`
		Tool        string `json:"tool"`
		Signature   string `json:"signature"`
		Description string `json:"description,omitempty"`
	}
	var b strings.Builder
	docs := []matchDoc{}
	for _, t := range picked {
		if len(docs) == limit {
			break
		}
		sig := "await " + sigs[[2]string{t.Server, t.Name}]
		entry := sig + "\n"
		desc := firstSentence(t.Description)
		if desc != "" {
			entry = "/** " + desc + " */\n" + entry
		}
		if (b.Len()+len(entry)+3)/4 > budget && len(docs) > 0 {
			break
		}
		b.WriteString(entry)
		docs = append(docs, matchDoc{Server: t.Tags[0], Tool: t.Tags[1], Signature: sig, Description: desc})
	}
	head := fmt.Sprintf("%d of %d matching tools (%d tools in all)", len(docs), len(picked), len(tools))
	if len(picked) == 0 {
		head = fmt.Sprintf("no tool matches %q (%d tools in all); try other words, or an empty query for the catalog", query, len(tools))
	}
	for _, e := range errs {
		head += "\n(" + e + ")"
	}
	text := head + "\n\n" + b.String()
	structured, _ := json.Marshal(map[string]any{"match": match, "total": len(tools), "matches": docs})
	return toolResult(text, structured, false), nil
}

// tools are the caller's tools as catalog tools named as the script's
// client names them (clientgen.ValueName), each tagged, first, with its
// server's and tool's own names; errs say which servers could not list.
func (cm *codeMode) tools(ctx context.Context, r broker.Request) (tools []catalog.Tool, errs []string, err error) {
	servers, err := cm.s.b.ServersAt(r)
	if err != nil {
		return nil, nil, err
	}
	lists, lerrs := cm.s.toolsOf(ctx, r, servers)
	for i, si := range servers {
		if lerrs[i] != nil {
			errs = append(errs, si.Name+" is left out: it could not list its tools")
			continue
		}
		for _, raw := range lists[i].tools {
			var t struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"inputSchema"`
			}
			if json.Unmarshal(raw, &t) != nil || t.Name == "" {
				continue
			}
			tools = append(tools, catalog.Tool{Server: clientgen.ValueName(si.Name, "server"), Name: clientgen.ValueName(t.Name, "tool"),
				Description: t.Description, InputSchema: t.InputSchema, Tags: append([]string{si.Name, t.Name}, toolTags(si, t.Name, nil)...)})
		}
	}
	return tools, errs, nil
}

// firstSentence is a description's first sentence, bounded: enough to
// choose by.
func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return strings.ReplaceAll(s, "*/", "* /")
}

// toolResult is a tools/call result: one text block, and structured
// content when not nil.
func toolResult(text string, structured json.RawMessage, isError bool) json.RawMessage {
	res := map[string]any{"content": []map[string]string{{"type": "text", "text": text}}}
	if structured != nil {
		res["structuredContent"] = structured
	}
	if isError {
		res["isError"] = true
	}
	b, _ := json.Marshal(res)
	return b
}

func (cm *codeMode) Run(ctx context.Context, r broker.Request, code string) (json.RawMessage, error) {
	if !r.Caller.Rights.Code() {
		return nil, &broker.Error{Kind: broker.KindForbidden, Op: "run", Msg: "your rights do not let you run code on this broker",
			Hint: `the broker's owner can grant it with "code": true in your grant`}
	}
	cfg := cm.s.b.CodeMode()
	confined := !r.Caller.Owner
	rt, err := scripts.ChooseRuntime("", "", cfg.Runtime, exec.LookPath)
	if err != nil {
		cm.s.log.Warn("code mode: no runtime", "err", err)
		msg := "this broker has no JavaScript runtime for run"
		if !confined {
			msg = err.Error() + ` (the config's "mcp": {"runtime": ...})`
		}
		return toolResult(msg, nil, true), nil
	}
	kernel := confined && rt.Name != "deno" // bun and node: only the kernel confines them
	if kernel {
		if err := broker.ScriptConfinement(); err != nil {
			cm.s.log.Warn("code mode: a run cannot be confined on "+rt.Name, "caller", r.Caller.Name, "err", err)
			return toolResult("run confines the code of a caller other than the broker's owner, by deno's permissions or by the kernel, and this broker runs "+rt.Name+
				` on a kernel that cannot confine it: its owner can set "mcp": {"runtime": "deno"}`, nil, true), nil
		}
	}
	ctx, cancel := context.WithTimeoutCause(ctx, cfg.RunTimeout, errRunTimeout)
	defer cancel()
	stopped := fmt.Sprintf("[mcpx: the run was stopped after %s (mcp.runTimeout)]", cfg.RunTimeout)

	ln := newPipeListener()
	srv := NewServer(cm.h, cm.s.log)
	caller := r.Caller
	base := context.WithValue(context.Background(), identifyKey{}, listenerOpts{identify: func(*http.Request) (broker.Caller, error) { return caller, nil }})
	srv.BaseContext = func(net.Listener) context.Context { return base }
	var served sync.WaitGroup
	served.Go(func() { srv.Serve(ln) }) //nolint:errcheck // ErrServerClosed at Close
	defer func() {
		srv.Close()
		served.Wait()
	}()

	if err := os.MkdirAll(cm.cache, 0o700); err != nil {
		return nil, err
	}
	dir, cwd := r.Context.Cwd, r.Context.Cwd
	if dir == "" {
		// No root: the script runs in a directory of its own, which its
		// calls declare as their cwd.
		if dir, err = os.MkdirTemp(cm.cache, "nocwd-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		cwd = dir
	}
	var sandbox *runner.Sandbox
	switch {
	case kernel:
		sandbox = &runner.Sandbox{Read: []string{dir}, Env: []string{"PATH=/usr/bin:/bin", "NO_COLOR=1"},
			Confine: func(cmd *exec.Cmd, read, write []string, port uint16) (runner.Confinement, error) {
				c, err := broker.ConfineScript(cmd, read, write, port)
				if err != nil {
					return nil, err
				}
				return c, nil
			}}
	case confined:
		if strings.Contains(dir, ",") {
			return toolResult("run cannot confine a script to a directory whose name holds a comma", nil, true), nil
		}
		home := filepath.Join(cm.cache, "deno")
		sandbox = &runner.Sandbox{Read: []string{dir}, Env: []string{"HOME=" + home, "DENO_DIR=" + home, "PATH=/usr/bin:/bin", "NO_COLOR=1"}}
	}
	bc := client.New("http://mcpx-code-mode", client.Options{Dial: ln.dial})
	run, err := runner.Start(ctx, runner.Options{Client: bc, Caller: client.Caller{Cwd: cwd, Scope: string(r.Context.Scope)},
		Session: r.Context.Session, ParentSession: r.Context.ParentSession, Dir: dir, Relay: true})
	if err != nil {
		return cm.runFailed(ctx, r, "starting the run", stopped, err), nil
	}
	defer run.Close(context.WithoutCancel(ctx))
	// The script's records say what it did not have to: the run is the
	// caller's call of run on /mcp. No scope key: a key is a server's
	// scope applied to the caller, and the run's calls may reach as many
	// servers, of as many scopes; each call's record in the call log has
	// its own.
	records := &runner.Fields{Session: run.Caller().Session, ParentSession: run.Caller().ParentSession,
		Server: mcp.Name, Tool: mcp.ToolRun, Cwd: dir, Version: cm.s.version}
	env, err := run.Script(ctx, runner.Script{Runtime: rt, Path: scripts.ExecName, Snippet: code, Cache: cm.cache,
		Envelope: true, MaxOutput: cfg.MaxOutput, Stdin: strings.NewReader(""), Sandbox: sandbox, Records: records})
	if err != nil {
		var re *runner.Error
		if errors.As(err, &re) && re.Op == runner.OpBundle {
			return toolResult("the code does not compile: "+err.Error(), nil, true), nil
		}
		return cm.runFailed(ctx, r, "running the code", stopped, err), nil
	}
	if errors.Is(context.Cause(ctx), errRunTimeout) {
		env.Stderr += "\n" + stopped
	}
	structured, _ := json.Marshal(map[string]any{
		"value": env.Result, "exitCode": env.ExitCode, "ms": env.DurationMs, "calls": env.Calls,
		"logs": strings.TrimSpace(env.Stderr), "stdout": stdoutUnlessValue(env),
	})
	text := string(env.Result)
	if env.Result == nil {
		text = strings.TrimSpace(env.Stdout)
	}
	if env.ExitCode != 0 {
		text = fmt.Sprintf("the code failed (exit code %d):\n%s", env.ExitCode, strings.TrimSpace(env.Stderr))
	}
	return toolResult(text, structured, env.ExitCode != 0), nil
}

// stdoutUnlessValue is what the script printed when it is not its value.
func stdoutUnlessValue(env scripts.Envelope) string {
	if env.Result != nil {
		return ""
	}
	return env.Stdout
}

// errRunTimeout is the cause of a run's context that mcp.runTimeout ended.
var errRunTimeout = errors.New("the run's time is up (mcp.runTimeout)")

// runFailed is the result of a run that could not run: the whole error to
// the owner, a plain sentence to anyone else (the log has the rest), and
// stopped when the run's time was up before the script ran (the client
// and the bundle count in it).
func (cm *codeMode) runFailed(ctx context.Context, r broker.Request, what, stopped string, err error) json.RawMessage {
	cm.s.log.Warn("code mode: "+what, "caller", r.Caller.Name, "err", err)
	msg := what + " failed on the broker; its owner can read why in the daemon's log"
	if r.Caller.Owner {
		msg = what + ": " + err.Error()
	}
	if errors.Is(context.Cause(ctx), errRunTimeout) {
		msg += "\n" + stopped
	}
	return toolResult(msg, nil, true)
}

// pipeListener is an in-memory net.Listener: dial hands Accept one end of
// a net.Pipe.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	a, b := net.Pipe()
	select {
	case l.conns <- a:
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.done:
		return nil, net.ErrClosed
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "code-mode" }
