package wire

import "time"

// Query parameters of GET /v1/stats.
const (
	// QuerySince bounds the calls counted: a Go duration back from now
	// ("1h", "90m") or an RFC 3339 time; absent = every call on disk.
	QuerySince = "since"
	// QueryBy groups the figures: "server", "tool" or "caller"; absent =
	// the total only.
	QueryBy = "by"
	// QueryStep splits each row into a series of buckets of that Go
	// duration from since (which it needs) on, for charts: "1m".
	QueryStep = "step"
)

// CallStats is the /v1/stats document: figures from the daemon's call log
// (one record per tool call, package records), for `mcpx stats`.
type CallStats struct {
	Since time.Time `json:"since,omitzero"` // the calls counted began at or after it; absent = all on disk
	By    string    `json:"by,omitempty"`   // "server", "tool" or "caller"; absent = the total only
	// StepMs is ?step= in milliseconds: each row's Series holds buckets
	// of it from Since on; absent without ?step=.
	StepMs int64 `json:"stepMs,omitempty"`
	// Rows are the groups, most calls first; empty without By.
	Rows  []CallStatsRow `json:"rows"`
	Total CallStatsRow   `json:"total"`
	// Skipped counts lines of the log that are not records (a write cut
	// short by a full disk); they are left out.
	Skipped int            `json:"skipped,omitempty"`
	Records *RecordsStatus `json:"records"`
}

// CallStatsRow is the figures of one group of calls. Durations are as the
// broker saw them: resolving the scope, waiting for a child, the call.
type CallStatsRow struct {
	Key         string  `json:"key,omitempty"` // the server, "server.tool" or the caller's name; absent for the total
	Count       int     `json:"count"`
	Failures    int     `json:"failures"`    // calls that did not end ok: isError plus errors
	IsError     int     `json:"isError"`     // the tool answered with isError: true
	Errors      int     `json:"errors"`      // the call failed without a result
	FailureRate float64 `json:"failureRate"` // failures / count, from 0 to 1
	P50Ms       float64 `json:"p50Ms"`       // nearest-rank percentiles of the duration, in milliseconds
	P95Ms       float64 `json:"p95Ms"`
	P99Ms       float64 `json:"p99Ms"`
	BytesIn     int64   `json:"bytesIn"` // the arguments' sizes, summed
	BytesOut    int64   `json:"bytesOut"`
	// Series is the row's calls by ?step=, oldest first: every bucket from
	// since to the one of the row's last call, empty ones included;
	// absent without ?step=.
	Series []CallStatsBucket `json:"series,omitempty"`
}

// CallStatsBucket is one step of a row's Series.
type CallStatsBucket struct {
	Start    time.Time `json:"start"` // the calls that began in [start, start+step)
	Count    int       `json:"count"`
	Failures int       `json:"failures"`
	P50Ms    float64   `json:"p50Ms"`
	P95Ms    float64   `json:"p95Ms"`
}

// RecordsStatus is the call log's writer, in /v1/stats and /v1/instances.
type RecordsStatus struct {
	Enabled bool  `json:"enabled"`
	Written int64 `json:"written"` // records written since the daemon started
	Dropped int64 `json:"dropped"` // records dropped because the writer was behind
	Failed  int64 `json:"failed"`  // records lost because the directory or disk failed
	// LastError is why records are being lost now (the daemon's owner
	// only: it may name paths); absent when writing works.
	LastError string `json:"lastError,omitempty"`
}

// EventCall names the events of GET /v1/calls; each carries a
// CallFinished.
const EventCall = "call"

// CallFinished is one finished tool call on GET /v1/calls: what its record
// in the call log holds but the bodies.
type CallFinished struct {
	Time       time.Time `json:"time"`           // when the call began
	Server     string    `json:"server"`         // "" when the call named no server the caller may use
	Tool       string    `json:"tool,omitempty"` // absent unless the server's child listed it
	Key        string    `json:"key,omitempty"`  // the scope key the call landed on; absent when it named no server
	Caller     string    `json:"caller"`
	Via        string    `json:"via"`
	DurationMs float64   `json:"durationMs"`
	Outcome    string    `json:"outcome"`         // "ok", "isError" or "error"
	Error      string    `json:"error,omitempty"` // the error's kind, for "error"
	// Dropped counts the calls left out before this one because the
	// reader fell behind.
	Dropped int64 `json:"dropped,omitempty"`
}
