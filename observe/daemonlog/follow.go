package daemonlog

import "sync"

// followBuffer bounds the records a follower holds for a slow reader;
// past it the oldest are dropped and counted.
const followBuffer = 1024

// follower receives the records written after it began, that its query
// selects.
type follower struct {
	q     Query
	ready chan struct{} // has a value when lines may be waiting

	mu      sync.Mutex
	lines   [][]byte // guarded by mu
	dropped int      // guarded by mu
	done    bool     // guarded by mu: the file closed or the reader stopped
}

// push is called by File.Write with File.mu held: it never blocks.
func (fl *follower) push(p []byte) {
	// p may hold several records; a handler writes one, but be exact.
	for len(p) > 0 {
		line := p
		if i := indexNL(p); i >= 0 {
			line, p = p[:i], p[i+1:]
		} else {
			p = nil
		}
		if len(line) == 0 || !fl.q.Match(line) {
			continue
		}
		fl.mu.Lock()
		if !fl.done {
			if len(fl.lines) >= followBuffer {
				fl.lines[0] = nil
				fl.lines = fl.lines[1:]
				fl.dropped++
			}
			fl.lines = append(fl.lines, append([]byte(nil), line...))
		}
		fl.mu.Unlock()
	}
	fl.wake()
}

func (fl *follower) wake() {
	select {
	case fl.ready <- struct{}{}:
	default:
	}
}

func (fl *follower) end() {
	fl.mu.Lock()
	fl.done = true
	fl.mu.Unlock()
	fl.wake()
}

func indexNL(p []byte) int {
	for i, c := range p {
		if c == '\n' {
			return i
		}
	}
	return -1
}

// Follower is a live view of the records written after Follow, that its
// query selects. Wait for Ready, then Take.
type Follower struct {
	fl   *follower
	file *File
}

// Follow begins a live view of the records q selects that are written from
// now on. The caller must Stop it.
func (l *File) Follow(q Query) *Follower {
	fl := &follower{q: q, ready: make(chan struct{}, 1)}
	l.mu.Lock()
	if l.closed {
		fl.done = true
	} else {
		l.readers[fl] = true
	}
	l.mu.Unlock()
	return &Follower{fl: fl, file: l}
}

// Ready has a value when Take may return lines or Done has become true.
func (f *Follower) Ready() <-chan struct{} { return f.fl.ready }

// Take returns the lines waiting (the caller owns them), how many were
// dropped since the last Take because the reader was slow, and whether
// the view has ended (the file closed, or Stop).
func (f *Follower) Take() (lines [][]byte, dropped int, done bool) {
	f.fl.mu.Lock()
	defer f.fl.mu.Unlock()
	lines, dropped = f.fl.lines, f.fl.dropped
	f.fl.lines, f.fl.dropped = nil, 0
	return lines, dropped, f.fl.done
}

// Stop ends the view.
func (f *Follower) Stop() {
	f.file.mu.Lock()
	delete(f.file.readers, f.fl)
	f.file.mu.Unlock()
	f.fl.end()
}
