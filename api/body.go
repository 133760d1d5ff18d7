package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"time"

	"mcpx.dev/mcpx/broker"
)

// readBody reads the request body, at most s.maxBody bytes (more is a
// 413 through http.MaxBytesError), with surrounding whitespace trimmed. A
// body that stops arriving for s.bodyIdle is a 408: a client that opens a
// chunked body and never ends it must not hold a connection forever.
func (s *server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rc := http.NewResponseController(w)
	body := &idleReader{ReadCloser: r.Body, rc: rc, idle: s.bodyIdle}
	b, err := io.ReadAll(http.MaxBytesReader(w, body, s.maxBody))
	// The server's own read for the next request must not inherit the
	// deadline (an error here means deadlines are unsupported: no-op).
	rc.SetReadDeadline(time.Time{}) //nolint:errcheck
	if errors.Is(err, os.ErrDeadlineExceeded) {
		w.Header().Set("Connection", "close") // the rest of the body may still come
		return nil, &broker.Error{Kind: kindBodyTimeout, Op: "read body", Field: "body", Err: err,
			Msg:  fmt.Sprintf("the request body stopped arriving: no byte for %s", s.bodyIdle),
			Hint: "send the whole body without pausing"}
	}
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, err
		}
		return nil, &broker.Error{Kind: broker.KindBadRequest, Op: "read body", Field: "body",
			Msg: "could not read the request body", Err: err}
	}
	return trimSpace(b), nil
}

// readArguments reads tool arguments: a JSON object, passed on as sent. An
// empty body means no arguments ({}).
func (s *server) readArguments(w http.ResponseWriter, r *http.Request) (json.RawMessage, error) {
	b, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return json.RawMessage("{}"), nil
	}
	if err := s.checkDepth(b, "tool arguments"); err != nil {
		return nil, err
	}
	if err := checkObject(b, "tool arguments"); err != nil {
		return nil, err
	}
	return b, nil
}

// readPromptArguments reads prompt arguments: a JSON object of strings.
func (s *server) readPromptArguments(w http.ResponseWriter, r *http.Request) (map[string]string, error) {
	b, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	args := map[string]string{}
	if len(b) == 0 {
		return args, nil
	}
	if err := s.checkDepth(b, "prompt arguments"); err != nil {
		return nil, err
	}
	if err := checkObject(b, "prompt arguments"); err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, badBody("prompt arguments: "+err.Error(), "")
	}
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		v := raw[name]
		if len(v) == 0 || v[0] != '"' {
			return nil, badBody(fmt.Sprintf("prompt argument %q must be a string, not %s", name, jsonKind(v[0])),
				"quote the value: prompt arguments are strings")
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, badBody(fmt.Sprintf("prompt argument %q: %v", name, err), "")
		}
		args[name] = s
	}
	return args, nil
}

// checkDepth refuses arguments nested deeper than s.maxDepth. Children
// share their decoder's limits with every other caller: the official go-sdk
// exits on a message nested ~1,000 deep, failing every call in flight on
// it, so the bound is applied here, before any child sees the bytes.
func (s *server) checkDepth(b []byte, what string) error {
	if !deeperThan(b, s.maxDepth) {
		return nil
	}
	return &broker.Error{Kind: broker.KindBadRequest, Op: "read body", Field: "body",
		Msg:  fmt.Sprintf("%s nest deeper than %d levels (limits.maxDepth)", what, s.maxDepth),
		Hint: "send flatter arguments, or raise limits.maxDepth in the daemon's config"}
}

// deeperThan reports whether the JSON text b nests arrays and objects more
// than max levels deep. It counts brackets outside strings without decoding
// or allocating, so it is safe to run before anything else reads b; b need
// not be valid JSON (checkObject judges that).
func deeperThan(b []byte, max int) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			// Skip the string: find its closing quote, stepping over
			// escapes. IndexByte is vectorised, so long strings are cheap.
			for {
				j := bytes.IndexByte(b[i+1:], '"')
				if j < 0 {
					return false // unterminated: not JSON, and no deeper
				}
				i += j + 1
				if !escaped(b, i) {
					break
				}
			}
		case '[', '{':
			depth++
			if depth > max {
				return true
			}
		case ']', '}':
			if depth > 0 { // invalid JSON must not bank depth for later
				depth--
			}
		}
	}
	return false
}

// escaped reports whether the quote at b[i] is escaped: preceded by an odd
// number of backslashes.
func escaped(b []byte, i int) bool {
	n := 0
	for i--; i >= 0 && b[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// checkObject reports whether b is one well-formed JSON object. Syntax
// errors name the byte offset so the caller can find the mistake.
func checkObject(b []byte, what string) error {
	var v json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return badBody(fmt.Sprintf("%s are not valid JSON: %s at byte offset %d", what, se.Error(), se.Offset),
				"send a JSON object, e.g. {\"name\": \"value\"}")
		}
		return badBody(fmt.Sprintf("%s are not valid JSON: %s", what, err), "")
	}
	if b[0] != '{' {
		return badBody(fmt.Sprintf("%s must be a JSON object, not %s", what, jsonKind(b[0])),
			"wrap them in an object: {\"name\": value}")
	}
	return nil
}

// idleReader reads a request body with a progress deadline: each Read must
// see a byte within idle, however long the whole body takes.
type idleReader struct {
	io.ReadCloser
	rc   *http.ResponseController
	idle time.Duration
}

func (ir *idleReader) Read(p []byte) (int, error) {
	// Unsupported deadlines (a test recorder, HTTP/2 without them) just
	// mean no progress bound.
	ir.rc.SetReadDeadline(time.Now().Add(ir.idle)) //nolint:errcheck
	return ir.ReadCloser.Read(p)
}

func badBody(msg, hint string) error {
	return &broker.Error{Kind: broker.KindBadRequest, Op: "read body", Field: "body", Msg: msg, Hint: hint}
}

// jsonKind names the kind of JSON value that starts with c.
func jsonKind(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

func trimSpace(b []byte) []byte { return bytes.TrimSpace(b) }
