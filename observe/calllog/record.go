package calllog

import (
	"encoding/json"
	"fmt"
	"time"
)

// Outcome is how a call ended.
type Outcome string

// The outcomes of a call.
const (
	OK      Outcome = "ok"      // the tool answered and did not set isError
	IsError Outcome = "isError" // the tool answered with isError: true (a tool-level failure)
	Failed  Outcome = "error"   // no result: the broker or the child failed (Record.Error says how)
)

// Record is one tool call, one line of a records file. It never holds the
// call's arguments or result unless Arguments and Result are set (the
// records.bodies setting).
type Record struct {
	Time     time.Time     `json:"time"`               // when the call began
	Caller   string        `json:"caller"`             // the caller's name: "local:1000", a tailnet login
	Via      string        `json:"via"`                // how it reached the daemon: "unix", "tcp-loopback", "tailnet"
	Server   string        `json:"server"`             // the server's name in the config
	Tool     string        `json:"tool"`               // the tool's name
	Key      string        `json:"key,omitempty"`      // the scope key of the instance; "" if the call never got one
	Session  string        `json:"session,omitempty"`  // the caller's Mcpx-Session, if any
	TraceID  string        `json:"trace_id,omitempty"` // the OpenTelemetry trace the call was part of, with otel on
	Duration time.Duration `json:"-"`
	Outcome  Outcome       `json:"outcome"`
	// Error is the failure's kind when Outcome is Failed: the broker's
	// error kinds ("timeout", "child-failed", "not-found", …).
	Error    string `json:"error,omitempty"`
	BytesIn  int    `json:"bytesIn"`  // the arguments' size
	BytesOut int    `json:"bytesOut"` // the result's size; 0 for a failure

	// Arguments and Result are the call's bodies, kept only with
	// records.bodies on; the Log keeps them as they are, so the caller
	// must not change them after Add. A body larger than BodyLimit is
	// replaced by a JSON string saying so.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
}

// MarshalJSON writes r as one records line, the duration as durationUs
// (microseconds: sub-millisecond calls stay apart, and it reads easily).
func (r Record) MarshalJSON() ([]byte, error) { return json.Marshal(r.line()) }

// plain is a Record without its methods: encoding it does not recurse.
type plain Record

// lineOf is a Record as written.
type lineOf struct {
	plain
	DurationUs int64 `json:"durationUs"`
}

func (r Record) line() lineOf { return lineOf{plain(r), r.Duration.Microseconds()} }

// UnmarshalJSON reads a records line.
func (r *Record) UnmarshalJSON(b []byte) error {
	var v lineOf
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = Record(v.plain)
	r.Duration = time.Duration(v.DurationUs) * time.Microsecond
	return nil
}

// Body returns b as a record keeps it with bodies on: whole up to
// BodyLimit, else a JSON string giving its size.
func Body(b []byte) json.RawMessage {
	if len(b) <= BodyLimit {
		return b
	}
	return json.RawMessage(fmt.Sprintf(`"(%d bytes, over the records body limit of %d)"`, len(b), BodyLimit))
}
