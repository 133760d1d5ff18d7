package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		msg  string
		kind string // request, notification, response, none
		m    Message
		err  string
	}{
		{msg: `{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"name":"x"}}`, kind: "request",
			m: Message{ID: json.RawMessage(`"a\"b"`), Method: "tools/call", Params: json.RawMessage(`{"name":"x"}`)}},
		{msg: ` { "id" : 7 , "method" : "ping" } `, kind: "request", m: Message{ID: json.RawMessage(`7`), Method: "ping"}},
		// JSON-RPC: a null id is an id; it is no notification.
		{msg: `{"jsonrpc":"2.0","id":null,"method":"x"}`, kind: "request", m: Message{ID: json.RawMessage(`null`), Method: "x"}},
		{msg: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, kind: "notification", m: Message{Method: "notifications/initialized"}},
		{msg: `{"jsonrpc":"2.0","id":1,"result":{"a":[1,"}"]}}`, kind: "response", m: Message{ID: json.RawMessage(`1`), Result: json.RawMessage(`{"a":[1,"}"]}`)}},
		{msg: `{"id":null,"error":{"code":-32700,"message":"Parse error"}}`, kind: "response",
			m: Message{ID: json.RawMessage(`null`), Error: json.RawMessage(`{"code":-32700,"message":"Parse error"}`)}},
		{msg: `{"id":1}`, kind: "none", m: Message{ID: json.RawMessage(`1`)}},
		{msg: `{"id":1,"method":"a","method":"b"}`, kind: "request", m: Message{ID: json.RawMessage(`1`), Method: "b"}},
		{msg: `{"id":1,"method":3}`, err: "its method is not a string"},
		{msg: `[{"id":1,"method":"ping"}]`, err: ErrNotObject.Error()},
		{msg: `null`, err: ErrNotObject.Error()},
	} {
		m, err := Parse([]byte(tt.msg))
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("Parse(%s): err %v, want %q", tt.msg, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%s): %v", tt.msg, err)
			continue
		}
		if d := cmp.Diff(tt.m, m); d != "" {
			t.Errorf("Parse(%s) (-want +got):\n%s", tt.msg, d)
		}
		kind := "none"
		switch {
		case m.IsRequest():
			kind = "request"
		case m.IsNotification():
			kind = "notification"
		case m.IsResponse():
			kind = "response"
		}
		if kind != tt.kind {
			t.Errorf("Parse(%s) is a %s, want a %s", tt.msg, kind, tt.kind)
		}
	}
}

func TestCheck(t *testing.T) {
	if err := Check([]byte(`{"id":1}`)); err != nil {
		t.Errorf("Check of valid JSON: %v", err)
	}
	var se *json.SyntaxError
	if err := Check([]byte(`{"id":1`)); !errors.As(err, &se) {
		t.Errorf("Check of broken JSON = %v, want encoding/json's *SyntaxError", err)
	}
}

// TestErrorJSON: the error object's members and their order are
// JSON-RPC's, data left out when there is none, and a peer's error reads
// back into the same Error.
func TestErrorJSON(t *testing.T) {
	for _, tt := range []struct {
		e    *Error
		want string
	}{
		{&Error{Code: CodeMethodNotFound, Message: "method not found: x"}, `{"code":-32601,"message":"method not found: x"}`},
		{&Error{Code: CodeUnsupportedVersion, Message: "unsupported", Data: json.RawMessage(`{"supported":["2026-07-28"]}`)},
			`{"code":-32022,"message":"unsupported","data":{"supported":["2026-07-28"]}}`},
	} {
		b, err := json.Marshal(tt.e)
		if err != nil || string(b) != tt.want {
			t.Errorf("Marshal = %s, %v; want %s", b, err, tt.want)
		}
		var back Error
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tt.e, &back); d != "" {
			t.Errorf("round trip (-want +got):\n%s", d)
		}
	}
	var err error = fmt.Errorf("calling x: %w", &Error{Code: CodeInvalidParams, Message: "bad n"})
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInvalidParams || e.Error() != "bad n" {
		t.Errorf("errors.As(%v) = %v", err, e)
	}
}

func TestAppend(t *testing.T) {
	note, err := Notification(MethodProgress, map[string]any{"progressToken": 1, "message": "<b>"})
	if err != nil {
		t.Fatal(err)
	}
	noParams, _ := Notification(MethodInitialized, nil)
	for _, tt := range []struct{ got, want string }{
		{string(AppendRequest(nil, []byte(`7`), MethodToolsCall, []byte(`{"name":"x"}`))), `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`},
		{string(AppendRequest([]byte("> "), []byte(`"a"`), "we\"ird", nil)), `> {"jsonrpc":"2.0","id":"a","method":"we\"ird"}`},
		{string(AppendNotification(nil, MethodCancelled, []byte(`{"requestId":1}`))), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`},
		{string(note), `{"jsonrpc":"2.0","method":"notifications/progress","params":{"message":"\u003cb\u003e","progressToken":1}}`},
		{string(noParams), `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{string(AppendResult(nil, []byte(`"x"`), []byte(`{"a": 1}`))), `{"jsonrpc":"2.0","id":"x","result":{"a": 1}}`},
		{string(AppendError(nil, nil, &Error{Code: CodeParseError, Message: "parse error"})), `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`},
		{string(AppendError(nil, []byte(`3`), &Error{Code: CodeServerError, Message: "down", Data: json.RawMessage(`{"status": 502}`)})),
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"down","data":{"status":502}}}`},
		// Data that is not JSON is left out rather than breaking the answer.
		{string(AppendError(nil, []byte(`3`), &Error{Code: CodeInternalError, Message: "m", Data: json.RawMessage(`{`)})),
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"m"}}`},
	} {
		if tt.got != tt.want {
			t.Errorf("got  %s\nwant %s", tt.got, tt.want)
		}
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote`, `back\slash`, "new\nline", "zürich", "\x00", "<&>"} {
		got := AppendString([]byte("x"), s)
		var back string
		if err := json.Unmarshal(got[1:], &back); err != nil || back != s {
			t.Errorf("AppendString(%q) = %s: reads back as %q, %v", s, got, back, err)
		}
	}
}

// TestVersions: newest first, the stateless era before the handshake era,
// the handshake era's latest first among its own, and no list shared with
// a caller that changes it.
func TestVersions(t *testing.T) {
	all := SupportedVersions()
	want := []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
	if d := cmp.Diff(want, all); d != "" {
		t.Errorf("SupportedVersions (-want +got):\n%s", d)
	}
	if !slices.IsSortedFunc(all, func(a, b string) int { return -cmpString(a, b) }) {
		t.Errorf("SupportedVersions %q are not newest first", all)
	}
	hs := HandshakeVersions()
	if hs[0] != LatestHandshake || all[0] != StatelessVersion || !slices.Equal(all[1:], hs) {
		t.Errorf("HandshakeVersions %q, SupportedVersions %q", hs, all)
	}
	for _, v := range hs {
		if !IsHandshakeVersion(v) {
			t.Errorf("IsHandshakeVersion(%s) = false", v)
		}
	}
	if IsHandshakeVersion(StatelessVersion) || IsHandshakeVersion("") {
		t.Error("IsHandshakeVersion is true of a version outside the handshake era")
	}
	hs[0] = "changed"
	if HandshakeVersions()[0] != LatestHandshake || SupportedVersions()[1] != LatestHandshake {
		t.Error("a caller changed the version list")
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestSetMember(t *testing.T) {
	for _, tt := range []struct{ obj, key, val, want string }{
		{`{}`, "a", `1`, `{"a":1}`},
		{` { } `, "a", `1`, ` {"a":1 } `},
		{`{"b":2}`, "a", `1`, `{"a":1,"b":2}`},
		{`{"a":0,"b":{"a":5}}`, "a", `[1]`, `{"a":[1],"b":{"a":5}}`},
		{`{"a":0,"a":9}`, "a", `1`, `{"a":0,"a":1}`},
	} {
		got, err := SetMember([]byte(tt.obj), tt.key, []byte(tt.val))
		if err != nil || string(got) != tt.want {
			t.Errorf("SetMember(%s, %s, %s) = %s, %v; want %s", tt.obj, tt.key, tt.val, got, err, tt.want)
		}
	}
	if _, err := SetMember([]byte(`[1]`), "a", []byte(`1`)); err != ErrNotObject {
		t.Errorf("SetMember of an array: %v, want ErrNotObject", err)
	}
}

var wireSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\"}b"}]}}`,
	`{"jsonrpc":"2.0","id":"x","method":"roots/list","params":{}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":3,"progress":0.5}}`,
	`{"id":null,"error":{"code":-32700,"message":"Parse error"}}`,
	` { "id" : 2 , "result" : [ 1 , true , null , -1.5e3 ] } `,
	`{"id":1,"id":2,"result":{}}`,
	`{"_meta":{"a":1},"_meta":{"b":2}}`,
	`{}`,
	`[]`,
	`"str"`,
}

// FuzzParseEnvelope checks the in-place scanner against encoding/json.
func FuzzParseEnvelope(f *testing.F) {
	for _, s := range wireSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		if !json.Valid(msg) {
			return
		}
		e, err := Parse(msg)
		var m map[string]json.RawMessage
		if json.Unmarshal(msg, &m) != nil || m == nil {
			if err == nil && !bytes.Equal(bytes.TrimSpace(msg), []byte("null")) {
				t.Fatalf("Parse(%s) accepted a non-object", msg)
			}
			return
		}
		if bytes.Contains(msg, []byte(`\`)) {
			return // escaped keys are not JSON-RPC members to us
		}
		var method string
		if raw := m["method"]; raw != nil && (json.Unmarshal(raw, &method) != nil || IsNull(raw)) {
			if err == nil {
				t.Fatalf("Parse(%s) accepted a method that is not a string", msg)
			}
			return
		}
		if err != nil {
			t.Fatalf("Parse(%s): %v", msg, err)
		}
		if e.Method != method {
			t.Errorf("method = %q, want %q (message %s)", e.Method, method, msg)
		}
		for key, got := range map[string][]byte{"id": e.ID, "params": e.Params, "result": e.Result, "error": e.Error} {
			if want := m[key]; !bytes.Equal(compact(t, want), compact(t, got)) {
				t.Errorf("%s = %s, want %s (message %s)", key, got, want, msg)
			}
		}
	})
}

func compact(t *testing.T, b []byte) []byte {
	if b == nil {
		return nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatalf("invalid JSON %s: %v", b, err)
	}
	return buf.Bytes()
}
