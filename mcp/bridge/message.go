package bridge

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// The few parts of a JSON-RPC message the relay reads (package jsonrpc's
// envelope, read in place). Everything else passes through as the peer
// wrote it.

// parse reads msg's envelope, a null id taken for none; batch is set for
// a JSON array (whose envelope is left zero: a batch is relayed whole).
func parse(msg []byte) (e jsonrpc.Message, batch bool, err error) {
	if err := jsonrpc.Check(msg); err != nil {
		return e, false, err
	}
	if len(msg) > 0 && msg[0] == '[' {
		return e, true, nil
	}
	if e, err = jsonrpc.Parse(msg); err == nil && jsonrpc.IsNull(e.ID) {
		e.ID = nil
	}
	return e, false, err
}

// metaProtocolVersion is params._meta's protocol version, "" if none: a
// stateless request's (SEP-2575), which carries the standard headers
// (SEP-2243).
func metaProtocolVersion(e *jsonrpc.Message) string {
	v, _ := jsonrpc.Unquote(jsonrpc.Member(jsonrpc.Member(e.Params, `"_meta"`), `"`+jsonrpc.MetaProtocolVersion+`"`))
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

// errorResponse is a JSON-RPC error answer to id (raw JSON; nil = null),
// data encoded by encoding/json (nil = none).
func errorResponse(id json.RawMessage, code int, message string, data any) []byte {
	e := &jsonrpc.Error{Code: code, Message: message}
	if data != nil {
		e.Data, _ = json.Marshal(data)
	}
	return jsonrpc.AppendError(nil, id, e)
}

// rpcErrorBody reports whether body is a JSON-RPC response carrying an
// error: a server's own answer to a request it refused over HTTP
// (an unsupported protocol version, a header mismatch), which the client
// must see as it is.
func rpcErrorBody(body []byte) bool {
	e, batch, err := parse(body)
	return err == nil && !batch && e.Method == "" && len(e.Error) > 0
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
// val (raw), its other members as they were.
func replaceMember(msg []byte, key string, val json.RawMessage) []byte {
	out, err := jsonrpc.SetMember(msg, key, val)
	if err != nil {
		return msg
	}
	return out
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
