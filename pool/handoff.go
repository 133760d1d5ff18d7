package pool

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/pool/confine"
	"mcpx.dev/mcpx/pool/execid"
	"mcpx.dev/mcpx/pool/proc"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// The handoff: a daemon that replaces its own image (execve, same pid)
// hands its running stdio children to the next one. The children stay
// this process's children, so nothing about them changes but who reads
// their pipes: Handoff writes down each ready, idle instance (its key,
// root, definition identity, pid and mark, the numbers of its pipes, its
// session's snapshot, its ports and private directory) and runs the exec
// with the pool frozen; the new image's pool Adopts those whose
// definition identity is unchanged under its config, with the same ports
// and directory (adoptres.go), and stops the others, which the next call
// replaces.
//
// A url server's ready, idle instance is handed over too, with no child:
// its session's snapshot names the remote's session (Mcp-Session-Id), in
// which the successor goes on over a new HTTP transport, sending no
// second initialize (or, in the stateless era, server/discover). One not
// adopted is dropped without a DELETE: its url and headers may have
// changed, and the old ones are not written down (headers hold
// credentials), so the remote ends it when it expires it. A remote that
// ended the session meanwhile answers 404, and the next call goes through
// a new session (client.ErrSessionExpired: Pool.Do sends it again).
//
// Children must not carry a parent-death signal across the exec: the
// kernel sends it when the *thread* that forked them exits, and execve
// ends every thread but its caller. With a watchdog (proc.MaybeWatch,
// proc.Supervise), children are started without one: the watchdog kills
// them, by their mark, when the daemon dies, and it sees the same daemon
// (pid and start time) alive across an exec. Without a watchdog there is
// no handoff (ErrNoHandoff).

// HandoffState is what a pool hands to its successor. It is persisted
// (the daemon's handoff state file).
type HandoffState struct {
	// MarkSeq is the last child number used in marks: the successor goes
	// on from it, so no two children share a mark.
	MarkSeq int64 `json:"markSeq"`
	// Seq is the last instance number used per server, so ids are not
	// used again.
	Seq      map[string]int `json:"seq,omitempty"`
	Children []HandoffChild `json:"children"`
	// Events are the kept lifecycle events and NextEvent the next id: a
	// client resuming /v1/events across the upgrade loses nothing.
	Events    []Event `json:"events,omitempty"`
	NextEvent uint64  `json:"nextEvent,omitempty"`
	// TmpDirs are the run directories of the instances' private
	// directories (tmpBase): the successor removes them once empty, or at
	// its Close, with what the children not handed over left in them.
	TmpDirs []string `json:"tmpDirs,omitempty"`
}

// HandoffChild is one running instance being handed over: a stdio child,
// or a url server's session (URL).
type HandoffChild struct {
	ID       string    `json:"id"`
	Server   string    `json:"server"`
	Key      string    `json:"key"`
	Root     string    `json:"root"`
	Cwd      string    `json:"cwd,omitempty"`
	Degraded string    `json:"degraded,omitempty"`
	Index    int       `json:"index"`
	Created  time.Time `json:"created"`
	Started  time.Time `json:"started"`
	// SchemaKey is the effective definition's identity (schemaKey: the
	// command, arguments, environment, cwd and root as substituted, and
	// the executable's identity); Exec the executable's identity alone.
	SchemaKey string `json:"schemaKey"`
	Exec      string `json:"exec"`
	Pid       int    `json:"pid"`
	Start     uint64 `json:"start"` // the child's start time, so a reused pid is not taken for it
	Mark      string `json:"mark"`
	// Stdin, Stdout and Stderr are the numbers of this process's ends of
	// the child's pipes, kept open across the exec.
	Stdin   int             `json:"stdin"`
	Stdout  int             `json:"stdout"`
	Stderr  int             `json:"stderr"`
	Session client.Snapshot `json:"session"`
	// Tmpdir and Ports are the instance's ${mcpx.tmpdir} and its
	// ${mcpx.alloc.NAME} ports by name: the successor keeps the one and
	// claims the others.
	Tmpdir string         `json:"tmpdir,omitempty"`
	Ports  map[string]int `json:"ports,omitempty"`
	// URL: a url server's instance. It has no child: Exec, Pid, Start,
	// Mark and the descriptors are zero, and Session names the remote's
	// session (client.Snapshot.SessionID).
	URL bool `json:"url,omitempty"`
	// Account is a url instance's Target.Account: whose sign-in it uses.
	Account string `json:"account,omitempty"`
	// Confine is the definition's Server.Confine: an instance handed
	// over under another sandbox setting is not adopted.
	Confine string `json:"confine,omitempty"`
	// Sandbox is a confined child's Spec (part of its key) and its
	// confinement's state (sandbox.Cell.State); Proxy the number of this
	// process's descriptor of its egress proxy listener (0: none), kept
	// open across the exec (a crash's keeper holds it instead).
	Sandbox *HandedSandbox `json:"sandbox,omitempty"`
	Proxy   int            `json:"proxy,omitempty"`
}

// HandedSandbox is what a confined child's successor needs of its
// confinement: the child stays confined by itself (Landlock, namespaces
// and rlimits cannot be undone); the State names its cgroups and what
// was enforced.
type HandedSandbox struct {
	Spec  confine.Spec   `json:"spec"`
	State *sandbox.State `json:"state,omitempty"`
}

// Files returns the descriptors h names (none for a url instance).
func (h HandoffChild) Files() []int {
	if h.URL {
		return nil
	}
	fds := []int{h.Stdin, h.Stdout, h.Stderr}
	if h.Proxy != 0 {
		fds = append(fds, h.Proxy)
	}
	return fds
}

// target is the Target h's instance had: its key with its sandbox's.
func (h HandoffChild) target() Target {
	t := Target{Server: h.Server, Key: h.Key, Root: h.Root, Cwd: h.Cwd, Degraded: h.Degraded, Account: h.Account}
	if h.Sandbox != nil {
		spec := h.Sandbox.Spec
		t.Sandbox = &spec
	}
	return t
}

// ErrNoHandoff: this pool's children cannot outlive an exec of the daemon.
var ErrNoHandoff = errors.New("no watchdog: children are tied to the spawning thread (parent-death signal), and an exec would kill them")

// CanHandoff reports why the pool's children could not survive an exec
// (nil if they can: proc.Watched).
func CanHandoff() error {
	if !proc.Watched() {
		return ErrNoHandoff
	}
	return nil
}

// Handoff freezes the pool and calls exec with the state of its ready,
// idle stdio and url instances; exec is meant not to return (it replaces the
// process image). The pool stays frozen while exec runs: no call starts,
// no child is started or stopped. Instances that are not handed over
// (busy or starting ones, adapters) are left out: the successor starts
// them again on their next call, and their children, unmarked as handed
// over, are killed as leftovers. If exec returns, its error is returned
// and the pool goes on as before.
func (p *Pool) Handoff(exec func(HandoffState) error) error {
	if err := CanHandoff(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.unlock()
	if p.closed {
		return p.perr("handoff", Target{}, ErrClosed, "")
	}
	st := HandoffState{MarkSeq: proc.MarkSeq(), Seq: map[string]int{}}
	for k, v := range p.seq {
		st.Seq[k] = v
	}
	st.Events, st.NextEvent = p.events.kept()
	st.TmpDirs = p.runDirs()
	handed := map[string]bool{}
	// Each session handed over is sealed first (client.Session.Seal): no
	// message of its own is half written at the exec or written after its
	// snapshot. The seals are let go only if exec returns.
	sealCtx, cancel := context.WithTimeout(p.ctx, handoffSealTimeout)
	defer cancel()
	var unseal []func()
	defer func() {
		for _, u := range unseal {
			u()
		}
	}()
	for _, inst := range p.instances {
		if g := inst.gen; g != nil && g.sess != nil && inst.phase == phaseReady && inst.inflight == 0 {
			release, ok := g.sess.Seal(sealCtx)
			if !ok {
				p.log.Warn("upgrade: the child does not read its stdin: not handing it over", "server", inst.def.Name, "instance", inst.id)
				continue
			}
			unseal = append(unseal, release)
		}
		if h, ok := handoffOf(inst); ok {
			st.Children = append(st.Children, h)
			if !h.URL {
				handed[h.Mark] = true
			}
		}
	}
	// What is not handed over must not outlive the exec unowned: a child
	// starting, stopping or busy past the drain would be left with closed
	// pipes and no one to stop it.
	if n := proc.KillMarkedExcept(handed); n > 0 {
		p.log.Info("upgrade: killed the children not handed over", "count", n)
	}
	proc.Bye() // the watchdog sees its end close at the exec, the daemon alive
	return exec(st)
}

// upgradeIDJump is how far an adopted session's request ids jump past its
// snapshot's.
const upgradeIDJump = 1 << 20

// handoffSealTimeout bounds how long a hand-over waits for the messages
// being written to its children (Session.Seal), all of them together.
const handoffSealTimeout = 2 * time.Second

// handoffOf is inst's HandoffChild, if it can be handed over. Called with
// Pool.mu held.
func handoffOf(inst *instance) (HandoffChild, bool) {
	g := inst.gen
	if inst.phase != phaseReady || inst.inflight > 0 || g == nil || g.sess == nil {
		return HandoffChild{}, false
	}
	if g.proc == nil {
		// A url server's session, which lives at the remote; an adapter's
		// lives in this process, and goes with it.
		if inst.def.URL == "" || inst.def.Adapter != nil {
			return HandoffChild{}, false
		}
		return recordOf(inst, g), true
	}
	h := recordOf(inst, g)
	var ok bool
	h.Stdin, h.Stdout, h.Stderr, ok = g.proc.Files()
	h.Proxy, _ = g.proc.ProxyFD()
	return h, ok
}

// recordOf is inst's HandoffChild for g, its ready stdio child (but for
// the descriptors of its pipes) or url session. Called with Pool.mu held.
func recordOf(inst *instance, g *generation) HandoffChild {
	h := HandoffChild{ID: inst.id, Server: inst.def.Name, Key: inst.key.key, Account: inst.key.account, Root: inst.root, Cwd: inst.cwd, Degraded: inst.degraded,
		Index: inst.index, Created: inst.created, Started: inst.started,
		SchemaKey: g.schemaKey, Exec: g.execValue(), Session: g.sess.Snapshot()}
	if c := g.proc; c != nil {
		h.Pid, h.Start, h.Mark = c.Pid(), c.StartTime(), c.Mark()
	} else {
		h.URL = true
	}
	h.Confine = inst.def.Confine
	if inst.sandbox != nil {
		h.Sandbox = &HandedSandbox{Spec: *inst.sandbox}
		if c := g.cell(); c != nil {
			st := c.State()
			h.Sandbox.State = &st
		}
	}
	if r := inst.res; r != nil {
		h.Tmpdir = r.tmpdir
		for name, hold := range r.ports {
			if h.Ports == nil {
				h.Ports = map[string]int{}
			}
			h.Ports[name] = hold.Port()
		}
	}
	return h
}

// ClaimHandoff registers the handed-over children as this process's own
// before the orphan reaper first looks (call it before proc.Supervise;
// see proc.Claim), and goes on from the predecessor's mark numbers.
func ClaimHandoff(st HandoffState) {
	proc.ContinueMarks(st.MarkSeq)
	for _, h := range st.Children {
		if !h.URL {
			proc.Claim(h.Pid, h.Files()...)
		}
	}
}

// Adopted says what Adopt did with each handed-over instance, by id.
type Adopted struct {
	Adopted  []string
	Replaced []string // stopped: its definition changed (the next call starts a new child)
}

// Adopt takes over the children st hands over (call it once, after
// SetServers, before the first call). An instance whose server is still
// defined with the same identity (same effective definition and
// executable) is put back in the pool, ready, its session restored over
// the inherited pipes without a second initialize; the others are
// stopped (stdin closed, SIGTERM, SIGKILL), and their next call starts a
// child of the new definition. An adopted instance keeps its ports and
// private directory; those of one stopped are released once its child is
// gone. A url instance is adopted the same way, its session restored over
// a new HTTP transport in the remote's session; one not adopted is
// dropped (its remote session is left to expire).
func (p *Pool) Adopt(st HandoffState) Adopted {
	var out Adopted
	p.events.restore(st.Events, st.NextEvent)
	for _, dir := range st.TmpDirs {
		if p.isRunDir(dir) {
			p.keepRuns(dir)
		}
	}
	p.mu.Lock()
	for k, v := range st.Seq {
		p.seq[k] = max(p.seq[k], v)
	}
	p.unlock()
	// By index: each takes the lowest free, as it did when it was made.
	slices.SortFunc(st.Children, func(a, b HandoffChild) int { return cmp.Compare(a.Index, b.Index) })
	for _, h := range st.Children {
		log := p.log.With("server", h.Server, "key", h.Key, "instance", h.ID, "pid", h.Pid)
		// Past any id the old image could have used after the snapshot: a
		// url session is not sealed (Session.Seal), and a request the peer
		// still holds under a reused id would be refused with no id to
		// answer it by (go-sdk answers "request ID already in use" to
		// null), leaving the call waiting for ever.
		h.Session.NextID += upgradeIDJump
		var c inherited
		if !h.URL {
			c = p.inherit(h, log, true)
		}
		res, lost := p.reclaim(h)
		if why := p.adopt(h, c, res, lost, log); why != "" {
			log.Info("not adopting a handed-over child: stopping it", "why", why)
			out.Replaced = append(out.Replaced, h.ID)
			p.stopLater(c.proc, h, res)
			continue
		}
		out.Adopted = append(out.Adopted, h.ID)
	}
	return out
}

// inherited is a child adopt takes: its process, and the stdout its
// session reads (a survivor's resynchronises: survive.go), which the
// session's Close closes.
type inherited struct {
	proc   *proc.Process
	stdout io.ReadCloser
}

// inherit is the child h describes, inherited across the exec (ours) or
// kept by a killed daemon's keeper.
func (p *Pool) inherit(h HandoffChild, log *slog.Logger, ours bool) inherited {
	in := proc.Inherited{Pid: h.Pid, Start: h.Start, Mark: h.Mark, Stdin: h.Stdin, Stdout: h.Stdout, Stderr: h.Stderr, Ours: ours}
	in.Cell = resumeCell(h, log)
	c := proc.Adopt(in, log, &p.counters.server(h.Server).suppressed)
	return inherited{c, c.Stdout()}
}

// stopLater stops c, h's child, not adopted, in the background (bounded),
// then releases res, what was reclaimed for it (reclaim): its directory
// goes only once it is gone. c is nil for a url instance.
func (p *Pool) stopLater(c *proc.Process, h HandoffChild, res *resources) {
	p.wg.Go(func() {
		ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
		defer cancel()
		if c != nil {
			c.Stop(ctx)
		}
		p.freeResources(h.Server, h.ID, res)
	})
}

// adopt puts h's child c back in the pool, with res, the resources
// reclaimed for it (lost says what of them could not be), or says why not.
// On a refusal the caller still owns res.
func (p *Pool) adopt(h HandoffChild, c inherited, res *resources, lost string, log *slog.Logger) string {
	p.mu.Lock()
	def := p.servers[h.Server]
	why := ""
	switch {
	case def == nil:
		why = "its server is no longer defined"
	case (def.URL != "") != h.URL || def.Adapter != nil || def.Confine != h.Confine:
		why = "its definition changed"
	case p.instances[h.target().key()] != nil:
		why = "its key has an instance already"
	default:
		why = cmp.Or(fitResources(def, h), lost)
	}
	if why != "" {
		p.unlock()
		return why
	}
	// The same id: fmtID of the number it had (the placeholders of the
	// spec, which the identity covers, may name it).
	seq := p.seq[h.Server]
	if n, err := strconv.Atoi(strings.TrimPrefix(h.ID, h.Server+"-")); err == nil && fmtID(h.Server, n) == h.ID {
		p.seq[h.Server] = n - 1
	}
	inst, err := p.createLocked(def, h.target())
	p.seq[h.Server] = max(seq, p.seq[h.Server])
	if err != nil {
		p.unlock()
		return err.Error()
	}
	inst.created = h.Created
	if res != nil {
		why = p.adoptSpecLocked(inst, res)
	}
	a := &startAttempt{done: make(chan struct{})}
	p.updateLocked(inst, &event{kind: evStart, now: p.opts.Now(), attempt: a})
	sp := inst.spec
	p.unlock()

	var g *generation
	if why == "" {
		g, why = p.adoptGen(inst, sp, h, c)
	}
	if why != "" {
		p.mu.Lock()
		inst.res = nil // the caller's again: released once c is gone
		p.unlock()
		p.finishStart(inst, a, nil, p.perr("adopt", Target{Server: h.Server, Key: h.Key}, ErrStart, why), log)
		p.mu.Lock()
		p.removeLocked(inst, "", why)
		p.updateLocked(inst, &event{kind: evStopped, now: p.opts.Now()})
		p.releaseLocked(inst) // its index, for the replacement
		p.unlock()
		return why
	}
	if h.URL {
		log.Info("adopted a handed-over url session", "root", inst.root, "protocol", h.Session.Version)
	} else {
		log.Info("adopted a handed-over child", "root", inst.root, "protocol", h.Session.Version, "exec", g.execValue())
	}
	p.serveEgress(inst, g, log)
	p.keepSurvivor(inst, g, log)
	p.finishStart(inst, a, g, nil, log)
	return ""
}

// adoptGen builds the generation of h's child c, if its definition
// identity is unchanged; else it says why not.
func (p *Pool) adoptGen(inst *instance, sp spawnSpec, h HandoffChild, c inherited) (*generation, string) {
	if h.URL {
		return p.adoptURLGen(inst, sp, h)
	}
	if p.opts.Resolve != nil {
		ctx, cancel := context.WithTimeout(p.ctx, inst.startTimeout(p.opts.StartTimeout))
		r, err := p.opts.Resolve(ctx, sp.command, inst.def.Environment, sp.cwd)
		cancel()
		if err != nil {
			return nil, "resolving its command: " + err.Error()
		}
		sp.command, sp.devEnv, sp.isolated = r.Path, r.Env, r.Isolated
	}
	g := &generation{dead: make(chan struct{}), proc: c.proc}
	g.execOpts = execid.Options{Path: childPath(p.opts.Env, sp), Dir: sp.cwd, HashMax: p.opts.ExecHashMax, Args: sp.args}
	id := execid.Of(sp.command, g.execOpts)
	g.exec, g.execStat = &id, id.Stat
	g.schemaKey = schemaKey(inst.def, inst.root, sp, g.execValue())
	if g.schemaKey != h.SchemaKey || id.Value != h.Exec {
		return nil, "its definition changed"
	}
	opts, holder := p.sessionOptions(inst, g)
	sess, err := client.Restore(client.NewStdio(c.stdout, c.proc.Stdin()), opts, h.Session)
	if err != nil {
		return nil, err.Error()
	}
	holder.set(sess)
	g.sess = sess
	return g, ""
}

// adoptURLGen builds the generation of h's url session, over a new HTTP
// transport in the remote's session, if its definition identity (the url
// and headers as substituted, the root) is unchanged; else it says why
// not. A remote that has ended the session answers 404 to the GET stream
// Restore reopens, or to the next call: the session ends as expired, and
// that call goes through a new one (Pool.Do).
func (p *Pool) adoptURLGen(inst *instance, sp spawnSpec, h HandoffChild) (*generation, string) {
	g := &generation{dead: make(chan struct{})}
	g.schemaKey = schemaKey(inst.def, inst.root, sp, "")
	if g.schemaKey != h.SchemaKey {
		return nil, "its definition changed"
	}
	opts, holder := p.sessionOptions(inst, g)
	sess, err := client.Restore(client.NewHTTP(sp.url, sp.headers, p.urlClient(inst.def.Name, inst.key.account)), opts, h.Session)
	if err != nil {
		return nil, err.Error()
	}
	holder.set(sess)
	g.sess = sess
	return g, ""
}

// kept returns the kept events, oldest first, and the next id.
func (l *EventLog) kept() ([]Event, uint64) {
	evs, _, _ := l.Since(0)
	l.mu.Lock()
	defer l.mu.Unlock()
	return evs, l.next
}

// restore puts a predecessor's events (and its next id) before the ones
// this log has, which are numbered again after them.
func (l *EventLog) restore(evs []Event, next uint64) {
	if next == 0 {
		return
	}
	cur, _, _ := l.Since(0)
	l.mu.Lock()
	l.buf, l.start, l.next = l.buf[:0], 0, next
	l.mu.Unlock()
	for _, ev := range evs {
		l.put(ev)
	}
	for _, ev := range cur {
		l.Add(ev)
	}
}

// put appends ev with the id it has.
func (l *EventLog) put(ev Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) < cap(l.buf) {
		l.buf = append(l.buf, ev)
	} else {
		l.buf[l.start] = ev
		l.start = (l.start + 1) % len(l.buf)
	}
}
