package nixresolve

import (
	"cmp"
	"errors"
	"strings"
)

// Error kinds; an *Error wraps one of these (test with errors.Is).
var (
	ErrNoNix   = errors.New("nix is not installed")
	ErrSpec    = errors.New("bad program spec")
	ErrLock    = errors.New("cannot lock the flake reference")
	ErrEval    = errors.New("cannot evaluate the flake output")
	ErrBuild   = errors.New("cannot build the flake output")
	ErrProgram = errors.New("the flake output has no program to run")
	ErrTimeout = errors.New("nix timed out")
	ErrClosed  = errors.New("resolver is closed")
)

// Error is a failed resolution. Its message names the spec and carries
// nix's own words (the "error:" part of its stderr), never a bare exit code.
type Error struct {
	Spec   string // as written: nix:<ref>#<attr>
	Err    error  // one of the kinds above
	Msg    string // what went wrong, for a person
	Output string // nix's stderr, from its first "error:" line, trimmed
	Cause  error  // the underlying error (exec, context), if any

	noun string // what Spec is: "command" (the zero value) or "environment"
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(cmp.Or(e.noun, "command"))
	b.WriteString(" ")
	b.WriteString(e.Spec)
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if e.Output != "" {
		b.WriteString(": ")
		b.WriteString(e.Output)
	}
	return b.String()
}

func (e *Error) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Err, e.Cause}
	}
	return []error{e.Err}
}

// maxOutput bounds the nix output an error carries: a failed build's
// "last 10 log lines" fit, a runaway evaluation trace does not.
const maxOutput = 4 << 10

// nixMessage keeps what a person needs from nix's stderr: from its first
// "error:" line on (progress lines like "building '…drv'..." dropped), without
// the "--show-trace" advice, at most the last maxOutput bytes.
func nixMessage(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "error:") {
			start = i
			break
		}
	}
	if start >= 0 {
		lines = lines[start:]
	}
	kept := lines[:0]
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "(use '--show-trace'") {
			continue
		}
		kept = append(kept, strings.TrimRight(l, " "))
	}
	s := strings.TrimSpace(strings.Join(kept, "\n"))
	if len(s) > maxOutput {
		s = "…" + s[len(s)-maxOutput:]
	}
	return s
}
