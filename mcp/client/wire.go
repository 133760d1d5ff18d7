package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// This file holds the byte-level JSON-RPC helpers. Messages are scanned in
// place so that results reach callers as sub-slices of the received line:
// no re-marshalling, no copy. The scanners assume syntactically valid JSON
// (transports validate every message before returning it from Recv).

// envelope is one JSON-RPC message, as sub-slices of the received bytes.
type envelope struct {
	id     []byte // raw id, nil if absent
	method []byte // raw JSON string, nil if absent
	params []byte
	result []byte
	err    []byte
}

func (e *envelope) isRequest() bool      { return e.method != nil && e.id != nil }
func (e *envelope) isNotification() bool { return e.method != nil && e.id == nil }
func (e *envelope) isResponse() bool {
	return e.method == nil && e.id != nil && (e.result != nil || e.err != nil)
}

var errNotObject = jsonrpc.ErrNotObject

// parseEnvelope splits a JSON-RPC message into its members.
func parseEnvelope(msg []byte) (envelope, error) {
	var e envelope
	err := members(msg, func(key, val []byte) {
		switch string(key) {
		case `"id"`:
			e.id = val
		case `"method"`:
			e.method = val
		case `"params"`:
			e.params = val
		case `"result"`:
			e.result = val
		case `"error"`:
			e.err = val
		}
	})
	return e, err
}

// The scanners are package jsonrpc's (the MCP endpoint reads its
// clients' messages the same way).
var (
	members    = jsonrpc.Members
	elements   = jsonrpc.Elements
	member     = jsonrpc.Member
	skipSpace  = jsonrpc.SkipSpace
	skipValue  = jsonrpc.SkipValue
	skipString = jsonrpc.SkipString
	unquote    = jsonrpc.Unquote
)

// parseID reads a request id we issued (an integer). Peers that echo it as a
// string ("7") are tolerated.
func parseID(raw []byte) (int64, bool) {
	if len(raw) > 1 && raw[0] == '"' {
		raw = raw[1 : len(raw)-1]
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil
}

// appendString appends s as a JSON string.
func appendString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			b, _ := json.Marshal(s)
			return append(buf, b...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// appendParams appends params, compacted: the stdio framing forbids embedded
// newlines, and compacting also rejects invalid JSON before it reaches the
// child.
func appendParams(buf *bytes.Buffer, params []byte) error {
	if err := json.Compact(buf, params); err != nil {
		return fmt.Errorf("params are not valid JSON: %w", err)
	}
	return nil
}

// setMember returns obj with key (given unquoted and plain) set to the raw
// value val: an existing member's value is replaced in place (the last one,
// which is the one parsers keep), otherwise the member is inserted first.
// Other members keep their bytes and order.
func setMember(obj []byte, key string, val []byte) ([]byte, error) {
	start := skipSpace(obj, 0)
	if start >= len(obj) || obj[start] != '{' {
		return nil, errNotObject
	}
	qkey := `"` + key + `"`
	vs, ve := -1, -1
	err := members(obj, func(k, v []byte) {
		if string(k) == qkey {
			// v is a sub-slice of obj: recover its offsets.
			vs = cap(obj) - cap(v)
			ve = vs + len(v)
		}
	})
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(obj)+len(key)+len(val)+4)
	if vs >= 0 {
		out = append(out, obj[:vs]...)
		out = append(out, val...)
		return append(out, obj[ve:]...), nil
	}
	out = append(out, obj[:start+1]...)
	out = append(out, qkey...)
	out = append(out, ':')
	out = append(out, val...)
	rest := obj[start+1:]
	if i := skipSpace(rest, 0); i < len(rest) && rest[i] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...), nil
}

// withProgressToken returns params with params._meta.progressToken set to
// token, keeping every other field of params and _meta.
//
// Spec (basic/utilities/progress): "When a party wants to receive progress
// updates for a request, it includes a progressToken in the request
// metadata. Progress tokens MUST be a string or integer value [...] and MUST
// be unique across all active requests."
func withProgressToken(params []byte, token int64) ([]byte, error) {
	tok := strconv.AppendInt(nil, token, 10)
	if len(bytes.TrimSpace(params)) == 0 || bytes.Equal(bytes.TrimSpace(params), []byte("null")) {
		params = []byte("{}")
	}
	meta := []byte("{}")
	if bytes.Contains(params, []byte(`"_meta"`)) {
		if m := member(params, `"_meta"`); m != nil && bytes.HasPrefix(bytes.TrimSpace(m), []byte("{")) {
			meta = m
		}
	}
	meta, err := setMember(meta, "progressToken", tok)
	if err != nil {
		return nil, err
	}
	return setMember(params, "_meta", meta)
}

// bufPool holds message buffers for the write path.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuf() *bytes.Buffer { b := bufPool.Get().(*bytes.Buffer); b.Reset(); return b }

func putBuf(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 { // don't pin the odd huge message
		bufPool.Put(b)
	}
}
