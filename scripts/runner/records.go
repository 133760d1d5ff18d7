package runner

import (
	"bytes"
	"encoding/json"
	"io"
	"sync/atomic"
	"time"
)

// Fields are what a run adds to each of its script's log records (the
// generated client's log: one JSON object a line on stderr) that the
// script did not have to say: the run's session and parent session, the
// tool call the run is, the script's pid, its cwd, mcpx's version and the
// time since the script started. A field the record has already is its
// own: never overwritten. `mcpx run` adds them to the records it prints
// (--format json), code mode's run to the logs it answers (Script.Records).
//
// Set the exported fields before the script starts; Started and Enrich may
// then be called from any goroutine.
type Fields struct {
	Session, ParentSession string // "" = none
	// Server and Tool name the tool call the run is, as its caller called
	// it: code mode's run on /mcp is the tool run of the endpoint mcpx.
	// "" = none (a script of `mcpx run` is no tool call).
	Server, Tool string
	Cwd          string // where the script runs; "" = not said
	Version      string // mcpx's, always said
	pid          atomic.Int64
	start        atomic.Int64 // unix ns; 0 = not started
}

// Started tells f that the script runs, as pid.
func (f *Fields) Started(pid int) {
	f.start.Store(time.Now().UnixNano())
	f.pid.Store(int64(pid))
}

// Enrich is the record raw with the run's fields it lacks after its own
// members, whose bytes are unchanged; a line that is not a record
// ({"level", "msg", …}) is returned as it is. The fields come in this
// order: session, parentSession, server, tool, pid, cwd, mcpxVersion,
// elapsedMs.
func (f *Fields) Enrich(raw []byte) []byte {
	var rec map[string]json.RawMessage
	if json.Unmarshal(raw, &rec) != nil {
		return raw
	}
	var level, msg string
	if json.Unmarshal(rec["level"], &level) != nil || json.Unmarshal(rec["msg"], &msg) != nil {
		return raw
	}
	body := bytes.TrimRight(raw, " \t\r")
	out := append([]byte{}, body[:len(body)-1]...) // without its closing brace
	add := func(k string, v any) {
		if _, ok := rec[k]; ok {
			return
		}
		js, _ := json.Marshal(v)
		out = append(append(append(append(out, ',', '"'), k...), '"', ':'), js...)
	}
	for _, s := range []struct{ k, v string }{{"session", f.Session}, {"parentSession", f.ParentSession}, {"server", f.Server}, {"tool", f.Tool}} {
		if s.v != "" {
			add(s.k, s.v)
		}
	}
	if pid := f.pid.Load(); pid > 0 {
		add("pid", pid)
	}
	if f.Cwd != "" {
		add("cwd", f.Cwd)
	}
	add("mcpxVersion", f.Version)
	if st := f.start.Load(); st > 0 {
		add("elapsedMs", time.Since(time.Unix(0, st)).Milliseconds())
	}
	return append(out, '}')
}

// maxRecordLine bounds the line recordLines holds to enrich it: a longer
// one is passed on as it comes, unenriched, so that a script printing
// one endless line costs no more memory than its output's bound.
const maxRecordLine = 1 << 20

// recordLines passes what is written to it on to w line by line, each
// record enriched with f's fields as it is written (so that its elapsedMs
// is the record's own). flush writes what is left of a last line without
// a newline. Not safe for concurrent use: exec's copier alone writes it.
type recordLines struct {
	w    io.Writer
	f    *Fields
	buf  []byte // the line being written, up to maxRecordLine
	long bool   // the line being written was longer: passed on as it comes
}

func (l *recordLines) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		end := len(p) // of the line's bytes in p
		if i >= 0 {
			end = i
		}
		if !l.long && len(l.buf)+end > maxRecordLine {
			// Too long to hold: what is held, and the rest of the line as
			// it comes, pass on as they are.
			l.long = true
			if _, err := l.w.Write(l.buf); err != nil {
				return n, err
			}
			l.buf = l.buf[:0]
		}
		if l.long {
			if i >= 0 {
				end, l.long = end+1, false
			}
			if _, err := l.w.Write(p[:end]); err != nil {
				return n, err
			}
			p = p[end:]
			continue
		}
		l.buf = append(l.buf, p[:end]...)
		if i < 0 {
			return n, nil
		}
		_, err := l.w.Write(append(l.f.Enrich(l.buf), '\n'))
		l.buf, p = l.buf[:0], p[i+1:]
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (l *recordLines) flush() error {
	if len(l.buf) == 0 {
		return nil
	}
	_, err := l.w.Write(l.f.Enrich(l.buf))
	l.buf = l.buf[:0]
	return err
}
