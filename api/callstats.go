package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// statsWait bounds how long /v1/stats waits for the call log's writer to
// write the records already handed to it.
const statsWait = 5 * time.Second

// callStats answers the call log's figures. Admins only: the figures name
// callers.
func (s *server) callStats(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	if !c.Rights.Admin() {
		return &broker.Error{Kind: broker.KindForbidden, Op: "call stats", Msg: "only an admin may read the call statistics: they name every caller"}
	}
	q, err := statsQuery(r, time.Now())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), statsWait)
	defer cancel()
	sum, err := s.b.CallStats(ctx, q)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, callStatsDoc(q, sum, recordsDoc(c, s.b)))
	return nil
}

// callStatsDoc is q's figures as GET /v1/stats answers them.
func callStatsDoc(q broker.CallStatsQuery, sum broker.CallStats, rec *wire.RecordsStatus) wire.CallStats {
	doc := wire.CallStats{Since: q.Since, By: string(q.By), StepMs: q.Step.Milliseconds(), Rows: []wire.CallStatsRow{},
		Total: statsRow(sum.Total), Skipped: sum.Skipped, Records: rec}
	for _, row := range sum.Rows {
		doc.Rows = append(doc.Rows, statsRow(row))
	}
	return doc
}

// statsQuery reads ?since= (a duration back from now, or an RFC 3339 time)
// and ?by=.
func statsQuery(r *http.Request, now time.Time) (broker.CallStatsQuery, error) {
	var q broker.CallStatsQuery
	v := r.URL.Query()
	if err := q.GroupBy(v.Get(wire.QueryBy)); err != nil {
		return q, &broker.Error{Kind: broker.KindBadRequest, Op: "call stats", Field: wire.QueryBy, Msg: err.Error(),
			Hint: "use ?by=server, ?by=tool or ?by=caller, or leave it out for the total"}
	}
	if s := v.Get(wire.QuerySince); s != "" {
		var ok bool
		if q.Since, ok = parseSince(s, now); !ok {
			return q, &broker.Error{Kind: broker.KindBadRequest, Op: "call stats", Field: wire.QuerySince,
				Msg:  "since is neither a positive duration nor an RFC 3339 time",
				Hint: `use a duration back from now such as "1h" or "30m", or a time such as "2026-11-30T12:00:00Z"`}
		}
	}
	if s := v.Get(wire.QueryStep); s != "" {
		d, err := time.ParseDuration(s)
		switch {
		case err != nil || d < time.Second:
			return q, &broker.Error{Kind: broker.KindBadRequest, Op: "call stats", Field: wire.QueryStep,
				Msg: "step is not a duration of a second or more", Hint: `use a duration such as "1m" or "10s"`}
		case q.Since.IsZero():
			return q, &broker.Error{Kind: broker.KindBadRequest, Op: "call stats", Field: wire.QueryStep,
				Msg: "a step needs since: the series starts there", Hint: `add ?since=1h (or another start)`}
		case now.Sub(q.Since) > d*broker.MaxStatsBuckets:
			return q, &broker.Error{Kind: broker.KindBadRequest, Op: "call stats", Field: wire.QueryStep,
				Msg:  fmt.Sprintf("step %s makes more than %d buckets since %s", d, broker.MaxStatsBuckets, q.Since.Format(time.RFC3339)),
				Hint: "use a longer step or a later since"}
		}
		q.Step = d
	}
	return q, nil
}

func statsRow(r broker.CallStatsRow) wire.CallStatsRow {
	return wire.CallStatsRow{Key: r.Key, Count: r.Count, Failures: r.Failures, IsError: r.IsError, Errors: r.Errors,
		FailureRate: r.FailureRate, P50Ms: ms(r.P50), P95Ms: ms(r.P95), P99Ms: ms(r.P99), BytesIn: r.BytesIn, BytesOut: r.BytesOut,
		Series: seriesDoc(r.Series)}
}

func seriesDoc(in []broker.CallStatsBucket) []wire.CallStatsBucket {
	if in == nil {
		return nil
	}
	out := make([]wire.CallStatsBucket, len(in))
	for i, b := range in {
		out[i] = wire.CallStatsBucket{Start: b.Start, Count: b.Count, Failures: b.Failures, P50Ms: ms(b.P50), P95Ms: ms(b.P95)}
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// recordsDoc is the call log's writer as c may see it: the failure's text
// may name paths, so only the owner reads it.
func recordsDoc(c broker.Caller, b *broker.Broker) *wire.RecordsStatus {
	on, rc := b.RecordsStatus()
	doc := &wire.RecordsStatus{Enabled: on, Written: rc.Written, Dropped: rc.Dropped, Failed: rc.Failed}
	if rc.LastError != "" {
		doc.LastError = "records are not being written; the daemon log has the detail"
		if c.Owner {
			doc.LastError = rc.LastError
		}
	}
	return doc
}
