package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"mcpx.dev/mcpx/internal/suggest"
	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/observe/tracing"
)

// CallTool calls tool with args (a JSON object; nil = {}) and returns the
// child's CallToolResult bytes unchanged. onProgress, if non-nil, receives the
// params of each notifications/progress the child sends for this call.
// Cancelling ctx sends notifications/cancelled to the child.
//
// Every call, from any listener, passes here: with records on, each ends
// with one record in the call log (Broker.CallStats).
func (b *Broker) CallTool(ctx context.Context, r Request, tool string, args json.RawMessage, onProgress func(json.RawMessage)) (json.RawMessage, error) {
	obs := b.observers.Load()
	if b.records == nil && obs == nil {
		return b.callTool(ctx, r, tool, args, onProgress, nil)
	}
	start := time.Now()
	var info callInfo
	if tracing.Enabled() {
		info.trace = tracing.TraceID(ctx)
	}
	out, err := b.callTool(ctx, r, tool, args, onProgress, &info)
	b.finished(r, tool, info, start, args, out, err)
	return out, err
}

// callInfo is what callTool learned of where a call went.
type callInfo struct {
	key    string // the scope key the call landed on; "" if it named no server the caller may use
	listed bool   // the child listed the tool
	trace  string // the call's trace id (tracing), "" with otel off
}

// callTool is CallTool; info, if non-nil, is filled as the call goes.
// ErrTaskRequired is wrapped by the error of a plain call, with
// Request.NoImplicitTask, of a tool that runs only as a task.
var ErrTaskRequired = errors.New("the tool runs only as a task")

func (b *Broker) callTool(ctx context.Context, r Request, tool string, args json.RawMessage, onProgress func(json.RawMessage), info *callInfo) (json.RawMessage, error) {
	ctx = withCaller(ctx, r)
	var out json.RawMessage
	res, err := b.resolveIn(ctx, r, tool)
	if err != nil {
		return nil, err
	}
	if info != nil {
		info.key = res.target.Key
	}
	release, err := b.admit(ctx, r, res)
	if err != nil {
		return nil, err
	}
	defer release()
	if r.OnAdmitted != nil {
		r.OnAdmitted()
	}
	err = b.run(ctx, res, r.Server, "call "+tool, func(ctx context.Context, sess *client.Session) error {
		def, err := b.listedTool(ctx, sess, r, res, tool, info)
		if err != nil {
			return err
		}
		if r.OnTarget != nil {
			r.OnTarget(b.callTarget(r, res, tool, sess))
		}
		if taskSupport(def) == "required" {
			if r.NoImplicitTask {
				return &Error{Kind: KindBadRequest, Op: "call", Server: r.Server, Field: "tool",
					Msg: "tool " + tool + " runs only as a task", Err: ErrTaskRequired}
			}
			// The child runs it only as a task: run it as one and wait,
			// so that the simple call works (tasks.go).
			out, err = callAsTask(ctx, sess, tool, args)
			return err
		}
		out, err = sess.CallTool(ctx, tool, args, onProgress)
		return err
	})
	return out, err
}

// listedTool returns the definition of tool as the child lists it, after
// the checks every call passes: a tool the child does not list, or the
// caller's rights hide, is not found; r.CheckTool is asked. info, if
// non-nil, learns that the child listed it.
func (b *Broker) listedTool(ctx context.Context, sess *client.Session, r Request, res resolved, tool string, info *callInfo) (json.RawMessage, error) {
	def, ok, err := sess.Tool(ctx, tool)
	if err != nil {
		return nil, err
	}
	if !ok || res.hidden {
		// A tool the caller's rights hide is answered as one the child
		// does not list, after the same steps, the suggestion drawn
		// only from the tools it may see (a refusal to the owner's
		// metrics: opAuthorize).
		hint := fmt.Sprintf("`mcpx tools %s` lists its tools", r.Server)
		visible := r.Caller.Rights.Tools(res.use)
		names := slices.DeleteFunc(toolNames(ctx, sess), func(n string) bool { return !visible.Allows(n) })
		if s := suggest.Closest(tool, names); s != "" {
			hint = fmt.Sprintf("did you mean %q? %s", s, hint)
		}
		op := "call"
		if ok {
			op = opAuthorize
		}
		return nil, &Error{Kind: KindNotFound, Op: op, Server: r.Server, Msg: fmt.Sprintf("no tool %q", tool), Hint: hint}
	}
	if err := b.checkPinned(ctx, sess, res, r, tool, def); err != nil {
		return nil, err
	}
	if info != nil {
		info.listed = true
	}
	if r.CheckTool != nil {
		if err := r.CheckTool(def); err != nil {
			return nil, err
		}
	}
	return def, nil
}

// toolNames are the names in the child's (cached) tool list, for a hint.
func toolNames(ctx context.Context, sess *client.Session) []string {
	raw, err := sess.Tools(ctx)
	if err != nil {
		return nil
	}
	var tools []struct {
		Name string `json:"name"`
	}
	json.Unmarshal(raw, &tools) //nolint:errcheck // a hint: no names, no suggestion
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return names
}

// ReadResource returns the child's resources/read result for uri.
func (b *Broker) ReadResource(ctx context.Context, r Request, uri string) (json.RawMessage, error) {
	var out json.RawMessage
	err := b.do(ctx, r, "read resource", func(ctx context.Context, s *client.Session) (err error) {
		out, err = s.ReadResource(ctx, uri)
		return err
	})
	return out, err
}

// GetPrompt returns the child's prompts/get result.
func (b *Broker) GetPrompt(ctx context.Context, r Request, name string, args map[string]string) (json.RawMessage, error) {
	var out json.RawMessage
	err := b.do(ctx, r, "get prompt", func(ctx context.Context, s *client.Session) (err error) {
		out, err = s.GetPrompt(ctx, name, args)
		return err
	})
	return out, err
}

// callIDs are unique per daemon run: a random prefix drawn once, then a
// counter, so naming a call costs no syscall on the hot path.
var (
	callIDPrefix = func() string {
		var b [4]byte
		rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}()
	callIDSeq atomic.Uint64
)

func newCallID() string {
	return callIDPrefix + "-" + strconv.FormatUint(callIDSeq.Add(1), 10)
}

// do resolves r to an instance, admits the call (rate limits,
// maxConcurrent: ratelimit.go) and runs fn on its session under the
// server's call timeout.
func (b *Broker) do(ctx context.Context, r Request, op string, fn func(context.Context, *client.Session) error) error {
	res, err := b.resolveIn(ctx, r, "")
	if err != nil {
		return err
	}
	release, err := b.admit(ctx, r, res)
	if err != nil {
		return err
	}
	defer release()
	return b.run(ctx, res, r.Server, op, fn)
}

// run runs fn on the session of res's instance under the server's call
// timeout.
// A call that needs a sign-in its caller can be asked for waits for it
// (signin.go), then runs again.
func (b *Broker) run(ctx context.Context, res resolved, server, op string, fn func(context.Context, *client.Session) error) error {
	return b.retrySignedIn(ctx, server, res.target.Account, func() error { return b.runOnce(ctx, res, server, op, fn) })
}

func (b *Broker) runOnce(ctx context.Context, res resolved, server, op string, fn func(context.Context, *client.Session) error) error {
	// callTimeout bounds the call, not the wait for a starting child: that
	// has its own startTimeout, and the caller's deadline bounds both.
	d := res.def.CallTimeout.D()
	if e := b.oauth.Required(server, res.target.Account); e != nil {
		return authRequired(op, server, e) // at once, no child started to fail
	}
	err := b.pool.Do(ctx, res.target, func(s *client.Session) (err error) {
		ctx := ctx
		if tracing.Enabled() {
			var sp trace.Span
			ctx, sp = tracing.StartChild(ctx, "mcpx.child.call", tracing.Client)
			sp.SetAttributes(attribute.String("mcpx.server", server), attribute.String("mcpx.operation", op))
			defer func() { tracing.Fail(sp, err); sp.End() }()
		}
		if d <= 0 {
			return fn(ctx, s)
		}
		cctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		err = fn(cctx, s)
		if err != nil && cctx.Err() != nil && ctx.Err() == nil {
			return &Error{Kind: KindTimeout, Op: op, Server: server, Err: err,
				Msg:  fmt.Sprintf("the call ran past the server's callTimeout of %s; the child was sent notifications/cancelled", d),
				Hint: "raise callTimeout in the server's config if such calls are expected to take longer"}
		}
		return err
	})
	return b.translate(err, op, server)
}
