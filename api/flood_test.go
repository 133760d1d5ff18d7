package api_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// The attack run's endless lines through the REST API (issue 32, "A
// child's output is contained too"): a python child writes 100 MB of `a`
// with no newline, slowly, and then sleeps (testdata/flood.py).

// floodLimit is limits.maxMessageBytes in these tests: the 100 MB line is
// many times over it, so that a daemon holding the line would show.
const floodLimit = 4 << 20

// floodChild is the config of testdata/flood.py in mode, and the files it
// writes its pid and its progress to.
type floodChild struct{ config, pidFile, progress string }

func newFloodChild(t *testing.T, mode string) floodChild {
	t.Helper()
	python := testenv.Program(t, "python3", "apt-get install -y python3")
	script, err := filepath.Abs(filepath.Join("testdata", "flood.py"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := floodChild{pidFile: filepath.Join(dir, "pid"), progress: filepath.Join(dir, "progress")}
	cfg, _ := json.Marshal(map[string]any{"command": python, "args": []string{script, mode, c.pidFile, c.progress},
		"scope": "global", "callTimeout": "60s"})
	c.config = string(cfg)
	return c
}

// pid is the child's pid, as it wrote it at its start.
func (c floodChild) pid(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(c.pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %q: %v", b, err)
	}
	return pid
}

func startFloodDaemon(t *testing.T, servers map[string]string) *apitest.Daemon {
	cfg := apitest.DemoConfig(t, servers)
	cfg.Limits.MaxMessageBytes = floodLimit
	return apitest.Start(t, apitest.Options{Config: cfg})
}

// TestEndlessLineMidCallIsBadGateway: a child that answers a call with
// 100 MB and no newline gets its caller a 502 naming
// limits.maxMessageBytes as the line crosses the limit: before the child
// has written its line (it is cut off, or still writing, when the answer
// comes), so not at callTimeout (60 s), which is the only other way the
// call could end. The daemon allocates a ratio of the limit, not of the
// line, and keeps none of it; the next call is served by a fresh child.
func TestEndlessLineMidCallIsBadGateway(t *testing.T) {
	c := newFloodChild(t, "call")
	d := startFloodDaemon(t, map[string]string{"flood": c.config})
	first := d.Unix.Do(t, "POST", "/v1/servers/flood/tools/pid", `{}`).Result(t).Text()

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	r := d.Unix.Do(t, "POST", "/v1/servers/flood/tools/flood", `{}`)
	progress, _ := os.ReadFile(c.progress) // right when the answer came
	var after runtime.MemStats
	runtime.ReadMemStats(&after)

	if p := r.Problem(t); p.Status != 502 || !strings.Contains(p.Detail, "limits.maxMessageBytes") || !strings.Contains(p.Detail, strconv.Itoa(floodLimit)) {
		t.Fatalf("an endless line mid-call: %d %+v, want 502 naming limits.maxMessageBytes (%d)", r.StatusCode, p, floodLimit)
	}
	t.Logf("the child's progress when the 502 came: %q", progress)
	if string(progress) == "done" {
		t.Errorf("the child had written its whole 100 MB line before its caller had the error: the error did not come as the line crossed the limit")
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	runtime.GC()
	var settled runtime.MemStats
	runtime.ReadMemStats(&settled)
	t.Logf("a 100 MB line over a %d MiB limit: %.1f MiB allocated by the daemon, heap %+.1f MiB after", floodLimit>>20,
		float64(allocated)/(1<<20), (float64(settled.HeapAlloc)-float64(before.HeapAlloc))/(1<<20))
	if allocated > 8*floodLimit {
		t.Errorf("the daemon allocated %d bytes for a line over a %d-byte limit: memory grows with the child's line", allocated, floodLimit)
	}
	if grown := int64(settled.HeapAlloc) - int64(before.HeapAlloc); grown > 2*floodLimit {
		t.Errorf("the daemon's heap grew by %d bytes and stayed so", grown)
	}

	next := d.Unix.Do(t, "POST", "/v1/servers/flood/tools/pid", `{}`).Result(t).Text()
	if next == first {
		t.Errorf("the call after the endless line ran on the same child (pid %s); want a fresh one", next)
	}
}

// TestEndlessLineInsteadOfInitializeIsBadGateway: a child that writes
// 100 MB with no newline instead of answering initialize fails its start
// with a 502 naming limits.maxMessageBytes, and is gone when the caller
// has the error.
func TestEndlessLineInsteadOfInitializeIsBadGateway(t *testing.T) {
	c := newFloodChild(t, "init")
	d := startFloodDaemon(t, map[string]string{"flood": c.config})
	r := d.Unix.Do(t, "POST", "/v1/servers/flood/tools/pid", `{}`)
	pid := c.pid(t)
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid)) // right when the answer came
	if p := r.Problem(t); p.Status != 502 || !strings.Contains(p.Detail, "limits.maxMessageBytes") {
		t.Fatalf("an endless line instead of initialize: %d %+v, want 502 naming limits.maxMessageBytes", r.StatusCode, p)
	}
	if !os.IsNotExist(err) {
		progress, _ := os.ReadFile(c.progress)
		t.Errorf("the child (pid %d) of the failed start is still there when its caller has the error (/proc: %v; its progress %q)", pid, err, progress)
	}
}
