package broker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"mcpx.dev/mcpx/observe/tracing"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// Tasks (MCP 2025-11-25, basic/utilities/tasks): a tool whose definition
// says execution.taskSupport "optional" or "required" can be called as a
// task. The broker creates the child's task, hands the caller a task id of
// its own, and holds the child's instance for the task's life with one
// in-flight call (tasks/result, which the child answers when the task is
// terminal), so the instance is neither reaped nor evicted while a task on
// it works, and is reaped as usual once its last task ended.
//
// A task belongs to its caller (the identity: how it came and its name, or
// the daemon's own user) and to the instance it runs on. Its id is random
// (128 bits); another caller who names it finds no task, exactly as for an
// id that never existed, on every method. Tasks live in the broker, not in
// a connection: a caller that disconnects and comes back finds its tasks.
// A finished task, its result with it, is kept for the child's ttl (bounded
// by Options.TaskRetention) and then dropped.

// Task bounds.
const (
	// maxTasksPerCaller bounds what one caller can make the broker hold:
	// past it, its oldest finished task is dropped, and with none
	// finished a new task is refused.
	maxTasksPerCaller = 256
	// maxTaskLife bounds a task's work when the child gave no ttl.
	maxTaskLife = time.Hour
	// DefaultTaskRetention bounds how long a finished task is kept.
	DefaultTaskRetention = time.Hour
	// minTaskKeep is how long a finished task is kept at least, whatever
	// its ttl: long enough to fetch the result of a task that finished
	// late.
	minTaskKeep = 30 * time.Second
	// taskCallTimeout bounds a tasks/get or tasks/cancel sent to a child.
	taskCallTimeout = 30 * time.Second
)

// Task is one of a caller's tasks as the broker hands it out.
type Task struct {
	ID     string // mcpx's id, the only one the caller sees
	Server string // the server, as the caller named it
	Tool   string
	// Status is working, input_required, completed, failed or cancelled.
	Status        string
	StatusMessage string
	Created       time.Time // the child's createdAt; zero if it sent none
	Updated       time.Time // the child's lastUpdatedAt; zero if it sent none
	TTL           time.Duration
	PollInterval  time.Duration
	// Object is the child's latest Task object with its taskId replaced
	// by ID: what the MCP endpoint passes on.
	Object json.RawMessage
}

// taskRegistry is the broker's tasks. Safe for concurrent use.
type taskRegistry struct {
	ctx    context.Context // ends at Close: every task's wait ends
	cancel context.CancelFunc
	wg     sync.WaitGroup // the tasks' goroutines

	mu      sync.Mutex
	m       map[string]*task // guarded by mu; by mcpx id
	byChild map[string]*task // guarded by mu; by childKey
	seq     int              // guarded by mu; watcher ids
	closed  bool             // guarded by mu
	keep    time.Duration    // constant; the bound on a finished task's stay
}

// task is one task. Its fields after the first block are guarded by
// taskRegistry.mu.
type task struct {
	id, owner    string
	server, tool string // the caller's names
	poolServer   string // the instance: pool server and key
	key          string
	done         chan struct{} // closed once the task is terminal here

	childID  string
	sess     *client.Session
	meta     client.TaskMetadata
	obj      json.RawMessage // the child's latest Task object, as sent
	result   json.RawMessage // the tasks/result answer, once done
	err      error           // or why there is none
	expiry   *time.Timer
	watchers map[int]func(Task)
}

func newTaskRegistry(keep time.Duration) *taskRegistry {
	if keep <= 0 {
		keep = DefaultTaskRetention
	}
	t := &taskRegistry{m: map[string]*task{}, byChild: map[string]*task{}, keep: keep}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return t
}

// close ends every task's wait and waits for their goroutines; then no
// task remains.
func (tr *taskRegistry) close() {
	tr.mu.Lock()
	tr.closed = true
	tr.mu.Unlock()
	tr.cancel()
	tr.wg.Wait()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for id, t := range tr.m {
		if t.expiry != nil {
			t.expiry.Stop()
		}
		delete(tr.m, id)
	}
	clear(tr.byChild)
}

// taskOwner is who a task belongs to: the daemon's own user (its callers
// share, as they share sessions), or a caller by how it came and its name.
func taskOwner(c Caller) string {
	if c.Owner {
		return "owner"
	}
	return "@" + c.Via + ":" + url.PathEscape(c.Name)
}

func childKey(server, key, childID string) string { return server + "\x00" + key + "\x00" + childID }

func newTaskID() string {
	var b [16]byte
	rand.Read(b[:])
	return "task-" + hex.EncodeToString(b[:])
}

func taskNotFound(op, id string) *Error {
	return &Error{Kind: KindNotFound, Op: op, Field: "task", Msg: fmt.Sprintf("no task %q", id),
		Hint: "`mcpx tasks ls` lists your tasks; a finished task is kept only for its ttl"}
}

// lookup returns c's task id. Another caller's task is not found, as one
// that never existed; so is one whose server or tool c's rights no longer
// allow.
func (tr *taskRegistry) lookup(c Caller, id, op string) (*task, error) {
	tr.mu.Lock()
	t := tr.m[id]
	tr.mu.Unlock()
	if t == nil || t.owner != taskOwner(c) || !c.Rights.Allows(rights.Use{Server: t.server, Tool: t.tool}) {
		return nil, taskNotFound(op, id)
	}
	return t, nil
}

// snapshotLocked is t as the caller sees it.
func (t *task) snapshotLocked() Task {
	m := t.meta
	out := Task{ID: t.id, Server: t.server, Tool: t.tool, Status: m.Status, StatusMessage: m.StatusMessage,
		Object: withTaskID(t.obj, t.id)}
	out.Created, _ = time.Parse(time.RFC3339Nano, m.CreatedAt)
	out.Updated, _ = time.Parse(time.RFC3339Nano, m.UpdatedAt)
	if m.TTL != nil {
		out.TTL = time.Duration(*m.TTL) * time.Millisecond
	}
	if m.PollInterval != nil {
		out.PollInterval = time.Duration(*m.PollInterval) * time.Millisecond
	}
	return out
}

// updateLocked takes the child's Task object raw as t's status, unless t
// already ended here (a late notification must not undo its end). It
// reports whether the status changed.
func (t *task) updateLocked(raw json.RawMessage) bool {
	m, err := client.ParseTask(raw)
	if err != nil || m.ID != t.childID || isClosed(t.done) {
		return false
	}
	if w := taskObject(raw); w != nil {
		raw = w
	}
	changed := m.Status != t.meta.Status || m.StatusMessage != t.meta.StatusMessage
	t.meta, t.obj = m, bytes.Clone(raw)
	return changed
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// watchersLocked are the functions watching t.
func (t *task) watchersLocked() []func(Task) {
	fns := make([]func(Task), 0, len(t.watchers))
	for _, fn := range t.watchers {
		fns = append(fns, fn)
	}
	return fns
}

// notice takes a child's notifications/tasks/status to the task it is
// about. It runs on the child's reader: it does not block.
func (tr *taskRegistry) notice(n Notice) {
	if n.Method != jsonrpc.MethodTaskStatus {
		return
	}
	m, err := client.ParseTask(n.Params)
	if err != nil {
		return
	}
	tr.mu.Lock()
	t := tr.byChild[childKey(n.Server, n.Key, m.ID)]
	if t == nil || !t.updateLocked(n.Params) {
		tr.mu.Unlock()
		return
	}
	snap, fns := t.snapshotLocked(), t.watchersLocked()
	tr.mu.Unlock()
	for _, fn := range fns {
		fn(snap)
	}
}

// StartToolTask calls tool as a task (ttl: how long the child should keep
// it; 0 = its default) and returns the task once the child created it.
// The task then runs on its own: ctx bounds only its creation.
func (b *Broker) StartToolTask(ctx context.Context, r Request, tool string, args json.RawMessage, ttl time.Duration) (Task, error) {
	start := time.Now()
	var info callInfo
	if tracing.Enabled() {
		info.trace = tracing.TraceID(ctx)
	}
	out, t, err := b.startToolTask(ctx, r, tool, args, ttl, &info)
	if b.records != nil || b.observers.Load() != nil {
		b.finished(r, tool, info, start, args, out, err)
	}
	return t, err
}

func (b *Broker) startToolTask(ctx context.Context, r Request, tool string, args json.RawMessage, ttl time.Duration, info *callInfo) (json.RawMessage, Task, error) {
	res, err := b.resolveTool(r, tool)
	if err != nil {
		return nil, Task{}, err
	}
	info.key = res.target.Key
	tr := b.tasks
	t := &task{id: newTaskID(), owner: taskOwner(r.Caller), server: r.Server, tool: tool,
		poolServer: res.target.Server, key: res.target.Key, done: make(chan struct{})}
	release, err := b.admit(ctx, r, res) // a task holds its maxConcurrent slot while it runs
	if err != nil {
		return nil, Task{}, err
	}
	if err := tr.makeRoom(t.owner); err != nil {
		release()
		return nil, Task{}, err
	}
	type created struct {
		out json.RawMessage
		err error
	}
	ch := make(chan created, 1)
	// The creation is bounded by the caller; the task's work by its own
	// life (the registry's context, its ttl).
	cctx, stop := context.WithCancel(withCaller(tr.ctx, r))
	unbind := context.AfterFunc(ctx, stop)
	tr.wg.Go(func() {
		defer stop()
		defer release()
		answered := false
		answer := func(c created) {
			if !answered {
				answered = true
				ch <- c
			}
		}
		err := b.pool.Do(cctx, res.target, func(sess *client.Session) error {
			out, err := b.createTask(cctx, sess, r, res, tool, args, ttl, info)
			if err == nil {
				err = tr.add(t, sess, out)
			}
			if err != nil {
				// Not answered yet: Do may try once more.
				return err
			}
			answer(created{out, nil})
			unbind()
			b.awaitTask(t)
			return nil
		})
		answer(created{nil, err})
	})
	c := <-ch
	if c.err != nil {
		return nil, Task{}, b.translate(c.err, "call "+tool+" as a task", r.Server)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return c.out, t.snapshotLocked(), nil
}

// createTask sends tools/call as a task, once the tool passed every check
// a call passes and says it may run as one.
func (b *Broker) createTask(ctx context.Context, sess *client.Session, r Request, res resolved, tool string, args json.RawMessage, ttl time.Duration, info *callInfo) (json.RawMessage, error) {
	def, err := b.listedTool(ctx, sess, r, res, tool, info)
	if err != nil {
		return nil, err
	}
	if ts := taskSupport(def); ts != "optional" && ts != "required" {
		return nil, &Error{Kind: KindBadRequest, Op: "call as a task", Server: r.Server, Field: "task",
			Msg:  fmt.Sprintf("tool %q cannot run as a task: its execution.taskSupport is %q", tool, ts),
			Hint: "call it without ?task=true (`mcpx call` without --task)"}
	}
	return sess.CallToolTask(ctx, tool, args, ttl)
}

// makeRoom drops owner's oldest finished task if it holds the most tasks
// it may, or refuses when none of them is finished.
func (tr *taskRegistry) makeRoom(owner string) error {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.closed {
		return &Error{Kind: KindUnavailable, Op: "call as a task", Msg: "the daemon is stopping"}
	}
	var n int
	var oldest *task
	for _, t := range tr.m {
		if t.owner != owner {
			continue
		}
		n++
		if isClosed(t.done) && (oldest == nil || t.id < oldest.id) {
			oldest = t
		}
	}
	if n < maxTasksPerCaller {
		return nil
	}
	if oldest == nil {
		return &Error{Kind: KindExhausted, Op: "call as a task",
			Msg:  fmt.Sprintf("you have %d tasks working, the most a caller may", maxTasksPerCaller),
			Hint: "wait for one to finish, or cancel one (`mcpx tasks cancel <id>`)"}
	}
	tr.dropLocked(oldest)
	return nil
}

// add registers t, created on sess with the CreateTaskResult out.
func (tr *taskRegistry) add(t *task, sess *client.Session, out json.RawMessage) error {
	m, err := client.ParseTask(out)
	if err != nil {
		return &Error{Kind: KindChildFailed, Op: "call as a task", Server: t.server, Err: err,
			Msg: "the server answered a task-augmented call without a task (its CreateTaskResult has no task id or status)"}
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	t.childID, t.sess, t.meta = m.ID, sess, m
	t.obj = bytes.Clone(taskObject(out))
	tr.m[t.id] = t
	tr.byChild[childKey(t.poolServer, t.key, m.ID)] = t
	return nil
}

// awaitTask waits, on the task's own goroutine and holding its instance,
// for the child's tasks/result, then asks the child for the final status.
func (b *Broker) awaitTask(t *task) {
	tr := b.tasks
	tr.mu.Lock()
	life := maxTaskLife
	if t.meta.TTL != nil && *t.meta.TTL > 0 {
		life = min(time.Duration(*t.meta.TTL)*time.Millisecond, maxTaskLife)
	}
	tr.mu.Unlock()
	ctx, cancel := context.WithTimeout(tr.ctx, life)
	res, err := t.sess.Task(ctx, jsonrpc.MethodTasksResult, t.childID)
	cancel()
	if err != nil && tr.ctx.Err() == nil && ctx.Err() != nil {
		// Its life is over and it is still working: stop it.
		cctx, cancel := context.WithTimeout(tr.ctx, taskCallTimeout)
		t.sess.Task(cctx, jsonrpc.MethodTasksCancel, t.childID) //nolint:errcheck // the child may have ended it
		cancel()
	}
	var final json.RawMessage
	if tr.ctx.Err() == nil {
		gctx, cancel := context.WithTimeout(tr.ctx, taskCallTimeout)
		final, _ = t.sess.Task(gctx, jsonrpc.MethodTasksGet, t.childID)
		cancel()
	}
	tr.finish(t, res, err, final)
}

// finish records t's end: its result or error and the child's last word
// on its status; it is then kept for its ttl.
func (tr *taskRegistry) finish(t *task, res json.RawMessage, err error, final json.RawMessage) {
	tr.mu.Lock()
	if final != nil {
		t.updateLocked(final)
	}
	if !client.Terminal(t.meta.Status) {
		// The child did not say how it ended: its session is gone, or
		// its life ran out.
		t.meta.Status, t.meta.StatusMessage = "failed", "the task ended without the server saying how"
		if err != nil && errors.Is(err, client.ErrClosed) {
			t.meta.StatusMessage = "the server's instance stopped while the task was working"
		}
		t.obj = setTaskStatus(t.obj, t.meta.Status, t.meta.StatusMessage)
	}
	t.result, t.err = bytes.Clone(res), err
	close(t.done)
	keep := tr.keep
	if t.meta.TTL != nil {
		keep = min(max(time.Duration(*t.meta.TTL)*time.Millisecond, minTaskKeep), tr.keep)
	}
	if !tr.closed {
		t.expiry = time.AfterFunc(keep, func() {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			tr.dropLocked(t)
		})
	}
	snap, fns := t.snapshotLocked(), t.watchersLocked()
	t.watchers = nil
	tr.mu.Unlock()
	for _, fn := range fns {
		fn(snap)
	}
}

// dropLocked forgets a finished task.
func (tr *taskRegistry) dropLocked(t *task) {
	if tr.m[t.id] != t {
		return
	}
	if t.expiry != nil {
		t.expiry.Stop()
	}
	delete(tr.m, t.id)
	delete(tr.byChild, childKey(t.poolServer, t.key, t.childID))
}

// TaskStatus returns c's task id, asking the child while it works.
func (b *Broker) TaskStatus(ctx context.Context, c Caller, id string) (Task, error) {
	t, err := b.tasks.lookup(c, id, "get task")
	if err != nil {
		return Task{}, err
	}
	b.askChild(ctx, t, jsonrpc.MethodTasksGet)
	return b.tasks.snapshot(t), nil
}

// askChild sends method about t to its child while t works, and takes the
// answer as t's status. The task's own goroutine holds its instance, so
// its session is the one that created it. It returns the child's error.
func (b *Broker) askChild(ctx context.Context, t *task, method string) error {
	if isClosed(t.done) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, taskCallTimeout)
	defer cancel()
	raw, err := t.sess.Task(ctx, method, t.childID)
	if err != nil {
		return err
	}
	tr := b.tasks
	tr.mu.Lock()
	changed := t.updateLocked(raw)
	snap, fns := t.snapshotLocked(), t.watchersLocked()
	tr.mu.Unlock()
	if changed {
		for _, fn := range fns {
			fn(snap)
		}
	}
	return nil
}

func (tr *taskRegistry) snapshot(t *task) Task {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return t.snapshotLocked()
}

// TaskResult waits until c's task id is terminal (or ctx ends) and returns
// what the child's tasks/result answered: the tool's CallToolResult, its
// related-task _meta naming id.
func (b *Broker) TaskResult(ctx context.Context, c Caller, id string) (json.RawMessage, error) {
	t, err := b.tasks.lookup(c, id, "task result")
	if err != nil {
		return nil, err
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return nil, b.translate(ctx.Err(), "task result", t.server)
	}
	if t.err == nil {
		return withTaskID(t.result, id), nil
	}
	if snap := b.tasks.snapshot(t); snap.Status == "cancelled" {
		return nil, &Error{Kind: KindBadRequest, Op: "task result", Server: t.server, Field: "task",
			Msg: fmt.Sprintf("task %q was cancelled, so it has no result (%s)", id, snap.StatusMessage)}
	}
	return nil, b.taskError(t.err, "task result", t)
}

// taskError translates a child's error about t, its task id replaced by
// mcpx's: the child's ids are never shown.
func (b *Broker) taskError(err error, op string, t *task) error {
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) && t.childID != "" {
		c := *rpc
		c.Message = strings.ReplaceAll(c.Message, t.childID, t.id)
		c.Data = bytes.ReplaceAll(c.Data, []byte(t.childID), []byte(t.id))
		err = &c
	}
	return b.translate(err, op, t.server)
}

// Tasks returns c's tasks, newest first by their creation.
func (b *Broker) Tasks(c Caller) []Task {
	tr := b.tasks
	owner := taskOwner(c)
	tr.mu.Lock()
	var out []Task
	for _, t := range tr.m {
		if t.owner == owner && c.Rights.Allows(rights.Use{Server: t.server, Tool: t.tool}) {
			out = append(out, t.snapshotLocked())
		}
	}
	tr.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.After(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// CancelTask asks the child to cancel c's task id and returns its status
// after. A task already terminal is a bad request.
func (b *Broker) CancelTask(ctx context.Context, c Caller, id string) (Task, error) {
	t, err := b.tasks.lookup(c, id, "cancel task")
	if err != nil {
		return Task{}, err
	}
	if isClosed(t.done) {
		snap := b.tasks.snapshot(t)
		return snap, &Error{Kind: KindBadRequest, Op: "cancel task", Server: t.server, Field: "task",
			Msg: fmt.Sprintf("task %q has already ended (%s)", id, snap.Status)}
	}
	if err := b.askChild(ctx, t, jsonrpc.MethodTasksCancel); err != nil {
		return Task{}, b.taskError(err, "cancel task", t)
	}
	return b.tasks.snapshot(t), nil
}

// WatchTask calls fn with c's task id each time its status changes, until
// it ends (fn sees the end) or stop is called. fn runs on a child's reader
// or a task's goroutine: it must not block or call the broker.
func (b *Broker) WatchTask(c Caller, id string, fn func(Task)) (stop func(), err error) {
	tr := b.tasks
	t, err := tr.lookup(c, id, "watch task")
	if err != nil {
		return nil, err
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if isClosed(t.done) {
		return func() {}, nil
	}
	if t.watchers == nil {
		t.watchers = map[int]func(Task){}
	}
	tr.seq++
	n := tr.seq
	t.watchers[n] = fn
	return func() {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		delete(t.watchers, n)
	}, nil
}
