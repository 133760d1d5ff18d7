package calllog

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"time"
)

// By names what Summarize groups calls by.
type By string

// The groupings of Summarize.
const (
	ByNone   By = ""       // one row: every call
	ByServer By = "server" // a row per server
	ByTool   By = "tool"   // a row per server and tool: "server.tool"
	ByCaller By = "caller" // a row per caller name
)

// ParseBy reads a grouping name; "" is ByNone.
func ParseBy(s string) (By, error) {
	switch b := By(s); b {
	case ByNone, ByServer, ByTool, ByCaller:
		return b, nil
	}
	return "", fmt.Errorf("cannot group by %q: want server, tool or caller", s)
}

// Query selects the calls Summarize counts.
type Query struct {
	Since time.Time // calls that began at or after it; zero = every call on disk
	By    By
	// Step, if set, splits each row into Series: buckets of Step from
	// Since (which must then be set) to the last call, for charts.
	Step time.Duration
}

// MaxBuckets bounds a row's Series: Step is at least (now - Since) /
// MaxBuckets.
const MaxBuckets = 1440

// Bucket is the figures of one Step of a row's calls.
type Bucket struct {
	Start    time.Time // the bucket holds the calls that began in [Start, Start+Step)
	Count    int
	Failures int
	P50      time.Duration
	P95      time.Duration
}

// Row is the figures of one group of calls. Durations are the calls'
// durations as the broker saw them (resolution, a waiting start, the call).
type Row struct {
	Key   string // the server, "server.tool" or the caller; "" for the total
	Count int
	// Failures are the calls that did not end OK: IsError plus Errors.
	Failures int
	IsError  int // the tool answered with isError: true
	Errors   int // the call failed without a result
	// FailureRate is Failures / Count, in [0, 1].
	FailureRate float64
	P50         time.Duration
	P95         time.Duration
	P99         time.Duration
	BytesIn     int64
	BytesOut    int64
	// Series is the row's calls by Query.Step, oldest first, every bucket
	// from Since to the last call's (empty ones included); nil without
	// Step.
	Series []Bucket
}

// Summary is what Summarize found.
type Summary struct {
	Rows  []Row // sorted by Count, highest first, then Key
	Total Row
	// Skipped counts lines that are not records (a write cut short by a
	// full disk): they are left out of the figures.
	Skipped int
}

// Summarize reads the records files in dir and computes q's figures.
// A missing directory is no calls.
func Summarize(dir string, q Query) (Summary, error) {
	files, err := list(dir)
	if err != nil && !os.IsNotExist(err) {
		return Summary{}, fmt.Errorf("reading the records directory: %w", err)
	}
	groups := map[string]*group{}
	var total group
	var sum Summary
	for _, f := range files {
		if fi, err := os.Stat(f.path); err != nil || !q.Since.IsZero() && fi.ModTime().Before(q.Since) {
			continue // gone since listed, or every record in it is older
		}
		err := scan(f.path, func(r *Record) {
			if r.Time.Before(q.Since) {
				return
			}
			key := q.By.key(r)
			g := groups[key]
			if g == nil {
				g = &group{}
				groups[key] = g
			}
			g.add(r, q)
			total.add(r, q)
		}, &sum.Skipped)
		if err != nil {
			return Summary{}, err
		}
	}
	for key, g := range groups {
		if q.By != ByNone {
			sum.Rows = append(sum.Rows, g.row(key, q))
		}
	}
	slices.SortFunc(sum.Rows, func(a, b Row) int { return cmp.Or(b.Count-a.Count, cmp.Compare(a.Key, b.Key)) })
	sum.Total = total.row("", q)
	return sum, nil
}

func (by By) key(r *Record) string {
	switch by {
	case ByServer:
		return r.Server
	case ByTool:
		return r.Server + "." + r.Tool
	case ByCaller:
		return r.Caller
	}
	return ""
}

// scan calls fn for each record line of the file at path, counting the
// lines that are not records in skipped.
func scan(path string, fn func(*Record), skipped *int) error {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil // pruned since listed
	}
	if err != nil {
		return fmt.Errorf("reading records: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	// A line with bodies holds two bodies of at most BodyLimit each,
	// escaped; this leaves room for the escaping.
	sc.Buffer(make([]byte, 0, 64<<10), 8*BodyLimit+64<<10)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Server == "" {
			*skipped++
			continue
		}
		fn(&r)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

type group struct {
	durs              []time.Duration
	isError, errors   int
	bytesIn, bytesOut int64
	buckets           map[int]*bucket // by index from Query.Since, with Query.Step
}

type bucket struct {
	durs     []time.Duration
	failures int
}

func (g *group) add(r *Record, q Query) {
	g.durs = append(g.durs, r.Duration)
	switch r.Outcome {
	case IsError:
		g.isError++
	case Failed:
		g.errors++
	}
	g.bytesIn += int64(r.BytesIn)
	g.bytesOut += int64(r.BytesOut)
	if q.Step <= 0 {
		return
	}
	i := int(r.Time.Sub(q.Since) / q.Step)
	if i < 0 || i >= MaxBuckets {
		return // a clock step back or forth; the row's figures keep it
	}
	if g.buckets == nil {
		g.buckets = map[int]*bucket{}
	}
	b := g.buckets[i]
	if b == nil {
		b = &bucket{}
		g.buckets[i] = b
	}
	b.durs = append(b.durs, r.Duration)
	if r.Outcome != OK {
		b.failures++
	}
}

func (g *group) row(key string, q Query) Row {
	slices.Sort(g.durs)
	row := Row{Key: key, Count: len(g.durs), IsError: g.isError, Errors: g.errors, Failures: g.isError + g.errors,
		BytesIn: g.bytesIn, BytesOut: g.bytesOut,
		P50: Percentile(g.durs, 50), P95: Percentile(g.durs, 95), P99: Percentile(g.durs, 99)}
	if row.Count > 0 {
		row.FailureRate = float64(row.Failures) / float64(row.Count)
	}
	if q.Step > 0 {
		last := -1
		for i := range g.buckets {
			last = max(last, i)
		}
		row.Series = make([]Bucket, last+1)
		for i := range row.Series {
			row.Series[i].Start = q.Since.Add(time.Duration(i) * q.Step)
			if b := g.buckets[i]; b != nil {
				slices.Sort(b.durs)
				row.Series[i].Count, row.Series[i].Failures = len(b.durs), b.failures
				row.Series[i].P50, row.Series[i].P95 = Percentile(b.durs, 50), Percentile(b.durs, 95)
			}
		}
	}
	return row
}

// Percentile is the nearest-rank p-th percentile of sorted: the smallest
// value at least p percent of the values are at or below. 0 for none.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
