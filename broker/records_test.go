package broker_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/observe/calllog"
)

// recordsBroker is a demo broker (global scope) keeping its state in state.
func recordsBroker(t *testing.T, state string, edit func(*config.Config)) *broker.Broker {
	return startDemoBroker(t, demoSetup{scopes: map[string]config.ScopeKind{"demo": config.ScopeGlobal},
		config: edit, opts: broker.Options{StateDir: state}})
}

// callSequence makes a known sequence of calls: from the owner, 5 ok, 3
// isError, 2 refused by the child (-32602), 1 to a missing tool and 1 to a
// missing server; from a remote caller in a session, 2 ok.
func callSequence(t *testing.T, b *broker.Broker) {
	t.Helper()
	call := func(r broker.Request, tool, args string, wantErr bool) {
		t.Helper()
		res, err := b.CallTool(t.Context(), r, tool, json.RawMessage(args), nil)
		if (err != nil) != wantErr {
			t.Fatalf("%s.%s(%s) = %s, %v", r.Server, tool, args, res, err)
		}
	}
	owner := broker.Request{Caller: local, Server: "demo"}
	for range 5 {
		call(owner, "echo", `{"message":"hi"}`, false)
	}
	for range 3 {
		call(owner, "fail", `{"message":"no"}`, false)
	}
	for range 2 {
		call(owner, "strict", `{"n":0}`, true)
	}
	call(owner, "nope", `{}`, true)
	call(broker.Request{Caller: local, Server: "nosuch"}, "echo", `{}`, true)
	alice := broker.Request{Caller: broker.Caller{Name: "alice@example.com", Via: "tailnet", Rights: rights.Rights{{Servers: []string{"demo"}}}},
		Server: "demo", Context: broker.CallContext{Session: "s1"}}
	for range 2 {
		call(alice, "echo", `{"message":"hello"}`, false)
	}
}

// TestCallRecords: a known sequence of calls gives exactly its figures, and
// each record holds the caller, key, session, outcome and sizes, never a
// body.
func TestCallRecords(t *testing.T) {
	state := t.TempDir()
	b := recordsBroker(t, state, nil)
	callSequence(t, b)

	sum, err := b.CallStats(t.Context(), broker.CallStatsQuery{By: calllog.ByTool})
	if err != nil {
		t.Fatal(err)
	}
	type fig struct{ count, failures, isError, errors int }
	want := map[string]fig{
		"demo.echo": {7, 0, 0, 0}, "demo.fail": {3, 3, 3, 0}, "demo.strict": {2, 2, 0, 2},
		"demo.nope": {1, 1, 0, 1}, "nosuch.echo": {1, 1, 0, 1},
	}
	got := map[string]fig{}
	for _, r := range sum.Rows {
		got[r.Key] = fig{r.Count, r.Failures, r.IsError, r.Errors}
		if r.FailureRate != float64(r.Failures)/float64(r.Count) || r.P50 <= 0 || r.P50 > r.P95 || r.P95 > r.P99 {
			t.Errorf("row %+v: inconsistent rate or percentiles", r)
		}
	}
	if len(got) != len(want) || !equalFigs(got, want) {
		t.Errorf("by tool = %v, want %v", got, want)
	}
	if sum.Total.Count != 14 || sum.Total.Failures != 7 || sum.Total.FailureRate != 0.5 {
		t.Errorf("total = %+v, want 14 calls, 7 failures", sum.Total)
	}

	byCaller, err := b.CallStats(t.Context(), broker.CallStatsQuery{By: calllog.ByCaller})
	if err != nil {
		t.Fatal(err)
	}
	if len(byCaller.Rows) != 2 || byCaller.Rows[0].Key != "local:test" || byCaller.Rows[0].Count != 12 ||
		byCaller.Rows[0].Failures != 7 || byCaller.Rows[1].Key != "alice@example.com" || byCaller.Rows[1].Failures != 0 {
		t.Errorf("by caller = %+v", byCaller.Rows)
	}

	lines := readRecords(t, filepath.Join(state, broker.RecordsDir))
	if len(lines) != 14 {
		t.Fatalf("%d records, want 14", len(lines))
	}
	first, strict, nosuch, last := lines[0], lines[8], lines[11], lines[13]
	if first.Key != "global" || first.Caller != "local:test" || first.Via != "unix" || first.Outcome != calllog.OK ||
		first.BytesIn != len(`{"message":"hi"}`) || first.BytesOut == 0 || first.Arguments != nil || first.Result != nil {
		t.Errorf("first record = %+v", first)
	}
	if strict.Outcome != calllog.Failed || strict.Error != string(broker.KindBadRequest) || strict.BytesOut != 0 {
		t.Errorf("strict record = %+v", strict)
	}
	if nosuch.Server != "nosuch" || nosuch.Key != "" || nosuch.Error != string(broker.KindNotFound) {
		t.Errorf("missing-server record = %+v", nosuch)
	}
	if last.Session != "s1" || !strings.HasPrefix(last.Key, "global") || last.Via != "tailnet" {
		t.Errorf("remote record = %+v", last)
	}
	if on, c := b.RecordsStatus(); !on || c.Written != 14 || c.Failed != 0 || c.Dropped != 0 {
		t.Errorf("status = %v %+v", on, c)
	}
}

func equalFigs[K comparable, V comparable](a, b map[K]V) bool {
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return len(a) == len(b)
}

func readRecords(t *testing.T, dir string) []calllog.Record {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "calls-*.jsonl"))
	var out []calllog.Record
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for l := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
			var r calllog.Record
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			out = append(out, r)
		}
	}
	return out
}

// TestCallRecordsBodies: records.bodies keeps arguments and results.
func TestCallRecordsBodies(t *testing.T) {
	state := t.TempDir()
	b := recordsBroker(t, state, func(c *config.Config) { c.Records.Bodies = true })
	if _, err := b.CallTool(t.Context(), req("demo", ""), "echo", json.RawMessage(`{"message":"kept"}`), nil); err != nil {
		t.Fatal(err)
	}
	b.CallStats(t.Context(), broker.CallStatsQuery{}) // waits for the writer
	lines := readRecords(t, filepath.Join(state, broker.RecordsDir))
	if len(lines) != 1 || string(lines[0].Arguments) != `{"message":"kept"}` || !strings.Contains(string(lines[0].Result), "kept") {
		t.Fatalf("records = %+v", lines)
	}
}

// TestCallRecordsUnwritable: a records directory that cannot be created
// leaves calls working; the loss is counted and reported.
func TestCallRecordsUnwritable(t *testing.T) {
	state := t.TempDir()
	if err := os.WriteFile(filepath.Join(state, broker.RecordsDir), []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := recordsBroker(t, state, nil)
	for range 3 {
		res, err := b.CallTool(t.Context(), req("demo", ""), "echo", json.RawMessage(`{"message":"still"}`), nil)
		if err != nil || text(t, res) != "still" {
			t.Fatalf("call with an unwritable records directory: %s, %v", res, err)
		}
	}
	_, err := b.CallStats(t.Context(), broker.CallStatsQuery{})
	var be *broker.Error
	if !errors.As(err, &be) || be.Kind != broker.KindUnavailable || !strings.Contains(be.Private, "not a directory") {
		t.Errorf("stats of an unreadable log = %v, want unavailable, saying why", err)
	}
	on, c := b.RecordsStatus()
	if !on || c.Failed != 3 || c.Written != 0 || c.LastError == "" {
		t.Errorf("status = %v %+v, want 3 failed with the error", on, c)
	}
}

// TestCallRecordsOff: records.enabled false writes nothing.
func TestCallRecordsOff(t *testing.T) {
	state := t.TempDir()
	b := recordsBroker(t, state, func(c *config.Config) { off := false; c.Records.Enabled = &off })
	if _, err := b.CallTool(t.Context(), req("demo", ""), "echo", json.RawMessage(`{"message":"x"}`), nil); err != nil {
		t.Fatal(err)
	}
	sum, err := b.CallStats(t.Context(), broker.CallStatsQuery{})
	if on, _ := b.RecordsStatus(); on || err != nil || sum.Total.Count != 0 {
		t.Fatalf("records off: on=%v, %+v, %v", on, sum.Total, err)
	}
	if _, err := os.Stat(filepath.Join(state, broker.RecordsDir)); !os.IsNotExist(err) {
		t.Errorf("records directory exists with records off: %v", err)
	}
}
