package pool

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"mcpx.dev/mcpx/internal/atomicfile"
	"mcpx.dev/mcpx/pool/proc"
)

// Surviving a killed daemon (Options.Survive). Each ready stdio child's
// pipes are held by the watchdog as well (proc.Process.Keep), and what the
// next daemon needs to go on talking to it — the instance's key, root,
// definition identity, pid, start time, mark, executable, its session
// (era, protocol version, initialize answer), its ports and private
// directory — is kept in the survive file, rewritten atomically as
// children become ready and exit. The next daemon of the same state
// directory takes the pipes from the keeper (proc.Supervise) and
// AdoptSurvivors puts back the children whose definition is unchanged,
// as an upgrade's Adopt does, with three differences: they
// are not its children (their exit is watched in /proc); their stdout is
// resynchronised at the next line (the dead daemon may have read half of
// one); and their request ids jump past any the dead daemon could have
// used, so a late answer to one of its requests matches nothing and is
// dropped. An adopted child keeps its ports (claimed again) and its
// private directory, which stays in the dead daemon's run directory: the
// sweep leaves that directory to this pool, which removes it once empty
// or at Close (adoptres.go).
//
// A url server's ready instance is recorded too, with no child: its
// session's snapshot names the remote's session (Mcp-Session-Id), in
// which the next daemon goes on, as an upgrade's successor does
// (handoff.go), its request ids jumped as a child's are.

// surviveIDJump is how far a survivor's request ids jump past the last
// recorded: more requests than the dead daemon sent since it wrote the
// file.
const surviveIDJump = 1 << 32

// survivorRecord is one child in the survive file.
type survivorRecord struct {
	HandoffChild
	Exe string `json:"exe"` // /proc/<pid>/exe when it was kept
}

type surviveFile struct {
	Children []survivorRecord `json:"children"`
}

// survive is a pool's survive-file writer.
type survive struct {
	mu sync.Mutex // serializes writes: each takes the pool's state after the one before
}

// keepSurvivor gives g's child to the watchdog, if the pool's children
// survive a killed daemon.
func (p *Pool) keepSurvivor(inst *instance, g *generation, log *slog.Logger) {
	if !p.opts.Survive || g.proc == nil {
		return
	}
	if err := g.proc.Keep(); err != nil {
		log.Warn("survive: this child dies with the daemon", "err", err)
	}
}

// saveSurvivors rewrites the survive file with the pool's kept, ready
// children.
func (p *Pool) saveSurvivors() {
	if !p.opts.Survive || p.opts.SurviveFile == "" {
		return
	}
	p.surv.mu.Lock()
	defer p.surv.mu.Unlock()
	var f surviveFile
	p.mu.Lock()
	for _, inst := range p.instances {
		g := inst.gen
		if inst.phase != phaseReady || g == nil || g.sess == nil || !outlivesDaemon(inst.def, g) {
			continue
		}
		r := survivorRecord{HandoffChild: recordOf(inst, g)}
		if g.proc != nil {
			r.Exe = g.proc.Exe()
		}
		f.Children = append(f.Children, r)
	}
	p.unlock()
	slices.SortFunc(f.Children, func(a, b survivorRecord) int { return strings.Compare(a.ID, b.ID) })
	b, _ := json.Marshal(f)
	if err := atomicfile.Write(p.opts.SurviveFile, b, 0o600); err != nil {
		p.log.Warn("survive: cannot write the survive file", "err", err)
	}
}

// AdoptSurvivors puts back the children a killed predecessor kept
// (Options.Survive), whose pipes proc.Supervise took from its keeper: call it
// once, after SetServers, before the first call. An instance whose
// server is still defined with the same identity is ready again with its
// pid and session; the others are stopped, as is every kept child when
// the pool does not survive. It returns what it did.
func (p *Pool) AdoptSurvivors() Adopted {
	var out Adopted
	var f surviveFile
	if p.opts.SurviveFile != "" {
		if _, err := atomicfile.ReadJSON(p.opts.SurviveFile, &f); err != nil {
			p.log.Warn("survive: the survive file is unreadable: its children are killed", "err", err)
		}
	}
	slices.SortFunc(f.Children, func(a, b survivorRecord) int { return a.Index - b.Index })
	for _, r := range f.Children {
		h := r.HandoffChild
		h.Session.NextID += surviveIDJump
		log := p.log.With("server", h.Server, "key", h.Key, "instance", h.ID, "pid", h.Pid)
		var c inherited
		why := ""
		if !h.URL {
			s, ok := proc.TakeSurvivor(r.Mark)
			if !ok {
				continue // gone, or not kept by this keeper
			}
			h.Stdin, h.Stdout, h.Stderr, h.Proxy = s.Stdin, s.Stdout, s.Stderr, s.Proxy
			c = p.inherit(h, log, false)
			c.stdout = newResync(c.stdout)
			switch {
			case s.Pid != h.Pid || s.Start != h.Start:
				why = "the keeper's child is not the one recorded"
			case r.Exe == "" || proc.Exe(h.Pid) != r.Exe:
				why = "its executable is not the one recorded"
			}
		}
		res, lost := p.reclaim(h)
		switch {
		case !p.opts.Survive:
			why = "the pool no longer survives a killed daemon"
		case why == "":
			why = p.adopt(h, c, res, lost, log)
		}
		if why != "" {
			log.Info("not adopting a kept child: stopping it", "why", why)
			out.Replaced = append(out.Replaced, h.ID)
			p.stopLater(c.proc, h, res)
			continue
		}
		log.Info("adopted a child a killed daemon kept", "url", h.URL)
		out.Adopted = append(out.Adopted, h.ID)
	}
	if n := proc.KillSurvivors(p.log); n > 0 {
		p.log.Info("survive: killed the kept children with no record", "count", n)
	}
	p.wg.Go(p.saveSurvivors)
	return out
}

// resync is a survivor's stdout: its first line is dropped unless it is a
// whole JSON object, as it may be the end of one the dead daemon had read
// the start of. (A proper end of a JSON object is never one: it closes
// what it did not open.)
type resync struct {
	r       *bufio.Reader
	c       io.Closer
	checked bool
	pending []byte
}

func newResync(rc io.ReadCloser) io.ReadCloser {
	return &resync{r: bufio.NewReaderSize(rc, 64<<10), c: rc}
}

func (s *resync) Read(b []byte) (int, error) {
	if !s.checked {
		s.checked = true
		line, err := s.r.ReadSlice('\n')
		whole := err == nil && bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")) && json.Valid(line)
		if whole {
			s.pending = bytes.Clone(line)
		}
		for err == bufio.ErrBufferFull { // a long line: skip to its end
			_, err = s.r.ReadSlice('\n')
		}
		if err != nil && !whole {
			return 0, err
		}
	}
	if len(s.pending) > 0 {
		n := copy(b, s.pending)
		s.pending = s.pending[n:]
		return n, nil
	}
	return s.r.Read(b)
}

// Close closes the pipe, which unblocks a Read (the session's Close).
func (s *resync) Close() error { return s.c.Close() }

// saveSurvivorsOf rewrites the survive file if g, a generation of def,
// is recorded in it.
func (p *Pool) saveSurvivorsOf(def *Server, g *generation) {
	if p.opts.Survive && g != nil && outlivesDaemon(def, g) {
		p.wg.Go(p.saveSurvivors)
	}
}

// outlivesDaemon reports whether g, a generation of def, outlives a killed
// daemon: a stdio child the watchdog keeps, or a url server's session,
// which lives at the remote (an adapter's lives in this process).
func outlivesDaemon(def *Server, g *generation) bool {
	if g.proc != nil {
		return g.proc.Kept()
	}
	return def.URL != "" && def.Adapter == nil
}
