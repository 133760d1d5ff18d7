package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"mcpx.dev/mcpx/observe/calllog"
)

// finished hands one finished tool call to the call log and the
// observers. It runs on the call's path: it decodes nothing but an isError
// flag, and the call log takes the record without waiting (package
// records).
func (b *Broker) finished(r Request, tool string, info callInfo, start time.Time, args, out json.RawMessage, err error) {
	d := time.Since(start)
	outcome, kind := calllog.OK, Kind("")
	switch {
	case err != nil:
		outcome, kind = calllog.Failed, KindOf(err)
	case isToolError(out):
		outcome = calllog.IsError
	}
	if obs := b.observers.Load(); obs != nil {
		ev := CallEvent{Outcome: Outcome(outcome), Kind: kind, Duration: d, Caller: r.Caller.Name, Via: r.Caller.Via, Time: start}
		if info.key != "" {
			ev.Server, ev.Key = r.Server, info.key
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
	rec := calllog.Record{
		Time: start, Caller: r.Caller.Name, Via: r.Caller.Via, Server: r.Server, Tool: tool,
		Key: info.key, Session: r.Context.Session, Duration: d, TraceID: info.trace,
		Outcome: outcome, Error: string(kind), BytesIn: len(args), BytesOut: len(out),
	}
	if b.bodies {
		if len(args) > 0 {
			rec.Arguments = calllog.Body(args)
		}
		if len(out) > 0 {
			rec.Result = calllog.Body(out)
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

// RecordsCounters are what the call log's writer did since the daemon
// started (calllog.Counters): records written, dropped and lost, and its
// last failure while it lasts.
type RecordsCounters calllog.Counters

// RecordsStatus reports whether the call log is on and what its writer did
// since the daemon started.
func (b *Broker) RecordsStatus() (on bool, c RecordsCounters) {
	return b.records != nil, RecordsCounters(b.records.Counters())
}

// CallStatsQuery selects the calls CallStats counts (calllog.Query): those
// that began at or after Since (zero: every call on disk), grouped as By
// says (set it with GroupBy).
type CallStatsQuery calllog.Query

// GroupBy sets how q groups the calls: by "server", "tool" (a row per
// server and tool) or "caller"; "" is no grouping, the total only.
func (q *CallStatsQuery) GroupBy(name string) error {
	by, err := calllog.ParseBy(name)
	if err != nil {
		return err
	}
	q.By = by
	return nil
}

// CallStats are the call log's figures, as Broker.CallStats computes them
// (calllog.Summary).
type CallStats struct {
	Rows  []CallStatsRow // sorted by Count, highest first, then Key
	Total CallStatsRow
	// Skipped counts lines that are not records (a write cut short by a
	// full disk): they are left out of the figures.
	Skipped int
}

// CallStatsRow is the figures of one group of calls (calllog.Row): the
// count, the failures (tool errors and broker errors), the latency
// percentiles and the bytes in and out.
type CallStatsRow calllog.Row

// CallStatsBucket is one step of a row's Series (calllog.Bucket).
type CallStatsBucket = calllog.Bucket

// MaxStatsBuckets bounds a row's Series (calllog.MaxBuckets): a query's
// Step is at least its window over it.
const MaxStatsBuckets = calllog.MaxBuckets

// CallStats summarizes the call log (package records): the calls that
// began since q.Since, grouped by q.By. The records of calls that ended
// before it is called are counted (it waits for the writer, bounded by
// ctx). With records off it reads what earlier runs left; without a state
// directory there are none.
func (b *Broker) CallStats(ctx context.Context, q CallStatsQuery) (CallStats, error) {
	if b.recordsDir == "" {
		return CallStats{}, nil
	}
	if err := b.records.Sync(ctx); err != nil {
		return CallStats{}, &Error{Kind: KindTimeout, Op: "call stats", Msg: "the call log's writer did not catch up in time", Err: err}
	}
	sum, err := calllog.Summarize(b.recordsDir, calllog.Query(q))
	if err != nil {
		// Not a bug: the directory is broken (the writer says so in status).
		return CallStats{}, &Error{Kind: KindUnavailable, Op: "call stats", Err: err,
			Msg: "cannot read the call log", Private: "cannot read the call log: " + err.Error(),
			Hint: "`mcpx status` shows whether records are being written; fix or remove the records directory in the state directory"}
	}
	out := CallStats{Total: CallStatsRow(sum.Total), Skipped: sum.Skipped}
	for _, r := range sum.Rows {
		out.Rows = append(out.Rows, CallStatsRow(r))
	}
	return out, nil
}
