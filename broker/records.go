package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"mcpx.dev/mcpx/records"
)

// finished hands one finished tool call to the call log and the
// observers. It runs on the call's path: it decodes nothing but an isError
// flag, and the call log takes the record without waiting (package
// records).
func (b *Broker) finished(r Request, tool string, info callInfo, start time.Time, args, out json.RawMessage, err error) {
	d := time.Since(start)
	outcome, kind := records.OK, Kind("")
	switch {
	case err != nil:
		outcome, kind = records.Failed, KindOf(err)
	case isToolError(out):
		outcome = records.IsError
	}
	if obs := b.observers.Load(); obs != nil {
		ev := CallEvent{Outcome: outcome, Kind: kind, Duration: d}
		if info.key != "" {
			ev.Server = r.Server
		}
		if info.listed {
			ev.Tool = tool
		}
		for _, fn := range *obs {
			fn(ev)
		}
	}
	if b.records == nil {
		return
	}
	rec := records.Record{
		Time: start, Caller: r.Caller.Name, Via: r.Caller.Via, Server: r.Server, Tool: tool,
		Key: info.key, Session: r.Context.Session, Duration: d,
		Outcome: outcome, Error: string(kind), BytesIn: len(args), BytesOut: len(out),
	}
	if b.bodies {
		if len(args) > 0 {
			rec.Arguments = records.Body(args)
		}
		if len(out) > 0 {
			rec.Result = records.Body(out)
		}
	}
	b.records.Add(rec)
}

// isToolError reports whether a CallToolResult says isError: true. Only a
// result that holds the key is decoded: the key cannot appear unescaped
// inside a string value, so most results cost one scan.
func isToolError(res json.RawMessage) bool {
	if !bytes.Contains(res, []byte(`"isError"`)) {
		return false
	}
	var v struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(res, &v) == nil && v.IsError
}

// RecordsStatus reports whether the call log is on and what its writer did
// since the daemon started.
func (b *Broker) RecordsStatus() (on bool, c records.Counters) {
	return b.records != nil, b.records.Counters()
}

// CallStats summarizes the call log (package records): the calls that
// began since q.Since, grouped by q.By. The records of calls that ended
// before it is called are counted (it waits for the writer, bounded by
// ctx). With records off it reads what earlier runs left; without a state
// directory there are none.
func (b *Broker) CallStats(ctx context.Context, q records.Query) (records.Summary, error) {
	if b.recordsDir == "" {
		return records.Summary{}, nil
	}
	if err := b.records.Sync(ctx); err != nil {
		return records.Summary{}, &Error{Kind: KindTimeout, Op: "call stats", Msg: "the call log's writer did not catch up in time", Err: err}
	}
	sum, err := records.Summarize(b.recordsDir, q)
	if err != nil {
		// Not a bug: the directory is broken (the writer says so in status).
		return records.Summary{}, &Error{Kind: KindUnavailable, Op: "call stats", Err: err,
			Msg: "cannot read the call log", Private: "cannot read the call log: " + err.Error(),
			Hint: "`mcpx status` shows whether records are being written; fix or remove the records directory in the state directory"}
	}
	return sum, nil
}
