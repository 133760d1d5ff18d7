package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// This file holds the client's byte-level JSON-RPC helpers; the envelope
// and the scanner are package jsonrpc's (the MCP endpoint reads its
// clients' messages the same way). Messages are scanned in place so that
// results reach callers as sub-slices of the received line: no
// re-marshalling, no copy. The scanners assume syntactically valid JSON
// (transports validate every message before returning it from Recv).

// parseID reads a request id we issued (an integer). Peers that echo it as a
// string ("7") are tolerated.
func parseID(raw []byte) (int64, bool) {
	if len(raw) > 1 && raw[0] == '"' {
		raw = raw[1 : len(raw)-1]
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil
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
		if m := jsonrpc.Member(params, `"_meta"`); m != nil && bytes.HasPrefix(bytes.TrimSpace(m), []byte("{")) {
			meta = m
		}
	}
	meta, err := jsonrpc.SetMember(meta, "progressToken", tok)
	if err != nil {
		return nil, err
	}
	return jsonrpc.SetMember(params, "_meta", meta)
}

// bufPool holds message buffers for the write path.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuf() *bytes.Buffer { b := bufPool.Get().(*bytes.Buffer); b.Reset(); return b }

func putBuf(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 { // don't pin the odd huge message
		bufPool.Put(b)
	}
}
