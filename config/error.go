package config

import (
	"fmt"
	"slices"
	"strings"
)

// Error is every problem found in one config document. Each of Errs is a
// *Problem naming the server and field; errors.As finds them.
type Error struct {
	Source string // the file, "" for a config built in code
	Errs   []error
	// Warnings found in the same document (see Config.Warnings), so that a
	// refused config can be shown with them; Error() leaves them out.
	Warnings []*Problem
}

func (e *Error) Error() string {
	prefix := "config"
	if e.Source != "" {
		prefix += " " + e.Source
	}
	if len(e.Errs) == 1 {
		return prefix + ": " + e.Errs[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d problems:", prefix, len(e.Errs))
	for _, err := range e.Errs {
		b.WriteString("\n\t" + err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() []error { return e.Errs }

// Problem is one thing wrong with a config, or the reason it could not be
// read. Its text names the server and the field and says how to fix it:
//
//	server "git": unknown field "comand"; did you mean "command"?
type Problem struct {
	Op     string // what was being done: "load config"
	Server string // the server involved; "" for the document or the pool
	Field  string // the field involved, as args[1], env.NAME or pool.idleTimeout; "" if none
	Msg    string // what is wrong
	Hint   string // how to fix it, if known
	Err    error  // underlying cause (a missing file), if any
}

func (e *Problem) Error() string {
	s := e.Msg
	if s == "" && e.Err != nil {
		s = e.Err.Error()
	}
	if e.Server != "" {
		s = fmt.Sprintf("server %q: %s", e.Server, s)
	}
	if e.Field != "" && !strings.Contains(s, e.Field) {
		s += fmt.Sprintf(" (field %s)", e.Field)
	}
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

func (e *Problem) Unwrap() error { return e.Err }

// problems collects config errors and warnings, in the order they are found.
type problems struct {
	errs  []error
	warns []*Problem
	// foreign: the document is in a client's format (see the package doc),
	// so unknown keys are warnings, not errors.
	foreign bool
}

func (p *problems) add(server, field, msg, hint string) {
	p.errs = append(p.errs, &Problem{Op: "load config", Server: server, Field: field, Msg: msg, Hint: hint})
}

func (p *problems) warn(server, field, msg, hint string) {
	p.warns = append(p.warns, &Problem{Op: "load config", Server: server, Field: field, Msg: msg, Hint: hint})
}

// unknown reports a key mcpx does not know: an error in mcpx's own format,
// a warning that it is ignored in a client's, unless it is a typo (close to a
// key mcpx knows), which is an error in any file: ignoring a misspelt
// "scpoe" would change what runs.
func (p *problems) unknown(server, field, msg, hint string, typo bool) {
	if p.foreign && !typo {
		p.warn(server, field, msg+", ignored", hint)
		return
	}
	p.add(server, field, msg, hint)
}

// merge adds q's errors and warnings to p's. With disabled, q is a disabled
// server's: its errors become warnings, since nothing will run it.
func (p *problems) merge(q *problems, disabled bool) {
	for _, e := range q.errs {
		pr := *e.(*Problem)
		if disabled {
			pr.Msg = "disabled, but " + pr.Msg
			p.warns = append(p.warns, &pr)
		} else {
			p.errs = append(p.errs, &pr)
		}
	}
	p.warns = append(p.warns, q.warns...)
}

// groupByServer orders the problems by server, document-level ones first,
// keeping the order in which each server's problems were found.
func (p *problems) groupByServer(rank map[string]int) {
	slices.SortStableFunc(p.errs, func(a, b error) int {
		return rank[a.(*Problem).Server] - rank[b.(*Problem).Server]
	})
	slices.SortStableFunc(p.warns, func(a, b *Problem) int {
		return rank[a.Server] - rank[b.Server]
	})
}

func (p *problems) err(source string) error {
	if len(p.errs) == 0 {
		return nil
	}
	return &Error{Source: source, Errs: p.errs, Warnings: p.warns}
}
