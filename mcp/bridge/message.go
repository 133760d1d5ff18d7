package bridge

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
)

// The few parts of a JSON-RPC message the relay reads. Everything else
// passes through as the peer wrote it.

// envelope is a message's top-level members, raw.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// parse reads msg's envelope; batch is set for a JSON array (whose
// envelope is left zero: a batch is relayed whole).
func parse(msg []byte) (e envelope, batch bool, err error) {
	if len(msg) > 0 && msg[0] == '[' {
		var v []json.RawMessage
		return e, true, json.Unmarshal(msg, &v)
	}
	err = json.Unmarshal(msg, &e)
	return e, false, err
}

func (e *envelope) hasID() bool { return len(e.ID) > 0 && string(e.ID) != "null" }

// request: a call, which is answered.
func (e *envelope) request() bool { return e.Method != "" && e.hasID() }

// response: an answer to a request.
func (e *envelope) response() bool { return e.Method == "" && e.hasID() }

// key is the message's id as a map key: its JSON text.
func (e *envelope) key() string { return string(e.ID) }

// Protocol versions whose HTTP rules differ.
const (
	// statelessEra is the first version without sessions (SEP-2575):
	// every request names its version in _meta and carries the standard
	// headers (SEP-2243).
	statelessEra = "2026-07-28"
	// metaVersion is the _meta key of a stateless request's version.
	metaVersion = "io.modelcontextprotocol/protocolVersion"
)

// metaProtocolVersion is params._meta's protocol version, "" if none.
func (e *envelope) metaProtocolVersion() string {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(e.Params, &p) != nil {
		return ""
	}
	var v string
	if json.Unmarshal(p.Meta[metaVersion], &v) != nil {
		return ""
	}
	return v
}

// compact is msg on one line, or nil if it is not JSON.
func compact(msg []byte) []byte {
	if !bytes.ContainsAny(msg, "\r\n") {
		if json.Valid(msg) {
			return msg
		}
		return nil
	}
	var buf bytes.Buffer
	if json.Compact(&buf, msg) != nil {
		return nil
	}
	return buf.Bytes()
}

// JSON-RPC error codes the bridge answers with.
const (
	codeParseError = -32700
	// codeServerError is the implementation-defined server error: the
	// endpoint could not be reached, or refused the request over HTTP.
	codeServerError = -32000
)

// errorResponse is a JSON-RPC error answer to id (raw JSON; nil = null).
func errorResponse(id json.RawMessage, code int, message string, data any) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{code, message, data}})
	return b
}

// notification is a JSON-RPC notification of method with params.
func notification(method string, params any) []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", method, params})
	return b
}

// rpcErrorBody reports whether body is a JSON-RPC response carrying an
// error: a server's own answer to a request it refused over HTTP
// (an unsupported protocol version, a header mismatch), which the client
// must see as it is.
func rpcErrorBody(body []byte) bool {
	var e envelope
	return json.Unmarshal(body, &e) == nil && e.Method == "" && len(e.Error) > 0
}

// mapRoots rewrites the file:// URIs of a roots/list result (raw) with
// mapPath, leaving out the roots it does not map; dropped counts those.
// A result it cannot read is returned as it is.
func mapRoots(result json.RawMessage, mapPath func(string) (string, bool)) (out json.RawMessage, dropped []string) {
	var res map[string]json.RawMessage
	if json.Unmarshal(result, &res) != nil {
		return result, nil
	}
	var roots []map[string]json.RawMessage
	if json.Unmarshal(res["roots"], &roots) != nil {
		return result, nil
	}
	kept := roots[:0]
	for _, r := range roots {
		var uri string
		if json.Unmarshal(r["uri"], &uri) != nil {
			kept = append(kept, r)
			continue
		}
		u, err := url.Parse(uri)
		if err != nil || u.Scheme != "file" {
			kept = append(kept, r)
			continue
		}
		remote, ok := mapPath(u.Path)
		if !ok {
			dropped = append(dropped, u.Path)
			continue
		}
		r["uri"], _ = json.Marshal((&url.URL{Scheme: "file", Path: remote}).String())
		kept = append(kept, r)
	}
	res["roots"], _ = json.Marshal(kept)
	out, err := json.Marshal(res)
	if err != nil {
		return result, nil
	}
	return out, dropped
}

// replaceMember returns the JSON object msg with its member key set to
// val (raw).
func replaceMember(msg []byte, key string, val json.RawMessage) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil {
		return msg
	}
	m[key] = val
	b, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return b
}

// mapInputResponses rewrites the roots in a stateless request's
// params.inputResponses (the answers to an input_required result's
// roots/list requests, SEP-2322), as mapRoots does.
func mapInputResponses(params json.RawMessage, mapPath func(string) (string, bool)) (out json.RawMessage, dropped []string, changed bool) {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil || len(p["inputResponses"]) == 0 {
		return params, nil, false
	}
	var responses map[string]json.RawMessage
	if json.Unmarshal(p["inputResponses"], &responses) != nil {
		return params, nil, false
	}
	for k, r := range responses {
		var probe struct {
			Roots json.RawMessage `json:"roots"`
		}
		if json.Unmarshal(r, &probe) != nil || len(probe.Roots) == 0 {
			continue
		}
		var d []string
		responses[k], d = mapRoots(r, mapPath)
		dropped = append(dropped, d...)
		changed = true
	}
	if !changed {
		return params, nil, false
	}
	p["inputResponses"], _ = json.Marshal(responses)
	out, err := json.Marshal(p)
	if err != nil {
		return params, nil, false
	}
	return out, dropped, true
}

// firstLine is s's first line, at most 200 bytes: a plain-text error body
// quoted in a message.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
