package client

import (
	"bytes"
	"errors"
	"fmt"

	"mcpx.dev/mcpx/internal/defaults"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// DefaultMaxMessageBytes is the largest message a child may send when
// Options.MaxMessageBytes is zero (64 MiB; the config's
// limits.maxMessageBytes, stated in package internal/defaults).
const DefaultMaxMessageBytes = defaults.MaxMessageBytes

// ErrMessageTooLarge is matched (errors.Is) by a *TooLargeError: the child
// sent a message over the session's limit.
var ErrMessageTooLarge = errors.New("message from the child is over the size limit")

// TooLargeError is a message from the child over Options.MaxMessageBytes.
// The transport never holds such a message whole: it keeps its first and
// last bytes, skips the rest (to the next newline on stdio, to the end of
// the event on an SSE stream) and recovers the JSON-RPC id, so that exactly
// the call it answers fails and the session goes on. A message whose id
// cannot be recovered ends the session, and so does one whose end was not
// seen (Unended): on stdio, a line with its id in its first bytes, a line
// that is no JSON object or batch, and a line whose rest does not come
// within a short grace are given up as they cross the limit.
type TooLargeError struct {
	Limit  int
	ID     []byte // the raw JSON-RPC id, nil if none was found
	Method string // for a request or notification from the child
	// Unended: the transport gave up the stream as the message crossed
	// the limit, before its end (a stdio line whose newline had not
	// come). Its call fails; the session then ends, since nothing says
	// where the next message starts.
	Unended bool
}

func (e *TooLargeError) Error() string {
	what := "a message"
	switch {
	case e.Method != "":
		what = fmt.Sprintf("a %s message", e.Method)
	case e.ID != nil:
		what = "an answer"
	}
	return fmt.Sprintf("the child sent %s larger than the limit of %d bytes; it was dropped", what, e.Limit)
}

// Is makes errors.Is(err, ErrMessageTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrMessageTooLarge }

// Bytes of an oversized message kept to recover its id.
const (
	headBytes = 4 << 10
	tailBytes = 256
)

// tooLarge builds the error for an oversized message from its first and
// last bytes. JSON-RPC members come in any order: the go-sdk writes the id
// first, the TypeScript SDK last (`{"result":…,"jsonrpc":"2.0","id":1}`),
// so both ends are read.
func tooLarge(limit int, head, tail []byte) *TooLargeError {
	e := &TooLargeError{Limit: limit}
	members := partialMembers(head)
	e.ID = members[`"id"`]
	if m, ok := jsonrpc.Unquote(members[`"method"`]); ok {
		e.Method = m
	}
	if e.ID == nil && tail != nil {
		e.ID = lastID(tail)
	}
	return e
}

// partialMembers returns the top-level members of the object whose first
// bytes are head, as far as they are complete.
func partialMembers(head []byte) map[string][]byte {
	m := map[string][]byte{}
	i := jsonrpc.SkipSpace(head, 0)
	if i >= len(head) || head[i] != '{' {
		return m
	}
	i = jsonrpc.SkipSpace(head, i+1)
	for i < len(head) && head[i] == '"' {
		kend := jsonrpc.SkipString(head, i)
		j := jsonrpc.SkipSpace(head, kend)
		if j >= len(head) || head[j] != ':' {
			break
		}
		j = jsonrpc.SkipSpace(head, j+1)
		vend := jsonrpc.SkipValue(head, j)
		if vend >= len(head) { // the value may go on past the head
			break
		}
		m[string(head[i:kend])] = head[j:vend]
		i = jsonrpc.SkipSpace(head, vend)
		if i >= len(head) || head[i] != ',' {
			break
		}
		i = jsonrpc.SkipSpace(head, i+1)
	}
	return m
}

// lastID returns the id of a message that ends in tail if the id is the
// object's last member (`…,"id":7}`), else nil.
func lastID(tail []byte) []byte {
	t := bytes.TrimRight(tail, " \t\r\n")
	if len(t) == 0 || t[len(t)-1] != '}' {
		return nil
	}
	t = bytes.TrimRight(t[:len(t)-1], " \t\r\n")
	var start int
	switch {
	case len(t) > 1 && t[len(t)-1] == '"':
		start = bytes.LastIndexByte(t[:len(t)-1], '"')
		if start < 0 || bytes.IndexByte(t[start:], '\\') >= 0 {
			return nil
		}
	default:
		start = len(t)
		for start > 0 && (t[start-1] >= '0' && t[start-1] <= '9' || t[start-1] == '-') {
			start--
		}
		if start == len(t) {
			return nil
		}
	}
	id := t[start:]
	before := bytes.TrimRight(t[:start], " \t\r\n")
	before, ok := bytes.CutSuffix(before, []byte(":"))
	if !ok {
		return nil
	}
	before, ok = bytes.CutSuffix(bytes.TrimRight(before, " \t\r\n"), []byte(`"id"`))
	if !ok {
		return nil
	}
	before = bytes.TrimRight(before, " \t\r\n")
	if len(before) == 0 || (before[len(before)-1] != ',' && before[len(before)-1] != '{') {
		return nil
	}
	return bytes.Clone(id)
}

// keepTail appends b to tail, keeping the last tailBytes.
func keepTail(tail, b []byte) []byte {
	if len(b) >= tailBytes {
		return append(tail[:0], b[len(b)-tailBytes:]...)
	}
	if over := len(tail) + len(b) - tailBytes; over > 0 {
		tail = append(tail[:0], tail[over:]...)
	}
	return append(tail, b...)
}

// tooLargeMessage handles an oversized message the transport skipped. It
// reports false when the session cannot go on: a message with no id or
// method to tell whose it was (some call would wait forever).
func (s *Session) tooLargeMessage(e *TooLargeError) bool {
	if e.Unended {
		s.endTooLarge(e)
		return false
	}
	switch {
	case e.Method != "" && e.ID != nil:
		s.log.Warn("dropping an oversized request from the mcp child", "method", e.Method, "limit", e.Limit)
		s.sendAsync("answer to "+e.Method, replyMessage(e.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("request larger than the client's limit of %d bytes", e.Limit)}))
		return true
	case e.Method != "":
		s.log.Warn("dropping an oversized notification from the mcp child", "method", e.Method, "limit", e.Limit)
		return true
	case e.ID == nil:
		s.log.Warn("the mcp child sent an oversized message with no recoverable id; ending the session", "limit", e.Limit)
		return false
	}
	id, ok := parseID(e.ID)
	if !ok {
		s.log.Warn("dropping an oversized answer to an id mcpx never sent", "id", string(e.ID), "limit", e.Limit)
		return true
	}
	s.mu.Lock()
	c := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if c == nil {
		s.log.Debug("dropping a late oversized mcp response", "id", id)
		return true
	}
	s.log.Warn("the mcp child answered with a message over the size limit; failing that call", "id", id, "limit", e.Limit)
	c.deliver(response{err: e})
	return true
}

// endTooLarge ends the session for a message over the limit whose end was
// not seen, then fails the call it answers (if any) with e: whoever gets
// that error finds the session already done, so the pool hands the next
// call a new child rather than this dead session.
func (s *Session) endTooLarge(e *TooLargeError) {
	var c *call
	if id, ok := parseID(e.ID); ok && e.Method == "" {
		s.mu.Lock()
		c = s.pending[id]
		delete(s.pending, id)
		s.mu.Unlock()
	}
	s.log.Warn("the mcp child sent a message over the size limit and did not end it; failing its call and ending the session",
		"id", string(e.ID), "method", e.Method, "limit", e.Limit)
	s.shutdown(e)
	if c != nil {
		c.deliver(response{err: e})
	}
}
