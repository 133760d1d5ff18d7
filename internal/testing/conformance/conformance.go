// Package conformance runs the official MCP conformance suite's server
// scenarios (npm @modelcontextprotocol/conformance, pinned in testdata/npm)
// against an MCP endpoint and reports which scenarios pass (tests only):
//
//	url := conformance.StartEverything(t, false)      // go-sdk's own conformance server
//	direct := conformance.Run(t, url, conformance.Options{Requirements: "2025-11-25"})
//	through := conformance.Run(t, conformance.Proxy(t, mcpxURL+"/mcp/everything", token),
//		conformance.Options{Requirements: "2025-11-25"})
//	if lost := conformance.Lost(direct, through); len(lost) > 0 { t.Errorf(...) }
//
// # The suite
//
// `conformance server --url U` connects to U as an MCP client, runs each
// scenario (initialize, tools/call with progress, sampling, elicitation,
// resources, prompts, SSE polling, DNS rebinding, the 2026-07-28 stateless
// era with input_required rounds, ...) and writes one checks.json per
// scenario. A scenario passes when none of its checks is a FAILURE (the
// suite's own summary counts the same way). `--requirements R` runs exactly
// the scenarios revision R requires plus the unscored ones (pending,
// extensions), at that revision; the suite's exit status reflects only the
// scored ones, so Run ignores it and reads every checks.json.
//
// The suite's scenarios expect the tools, resources and prompts of its
// "everything" server; go-sdk ships one (conformance/everything-server, the
// server its CI passes the suite with), which [StartEverything] builds from
// the module cache and runs. [Legs] are the two runs go-sdk's CI makes.
//
// # DNS rebinding
//
// The dns-rebinding-protection scenario (at 2025-11-25 and 2026-07-28)
// requires a URL whose host is localhost, 127.0.0.1 or [::1] (else both
// checks fail) and sends two POSTs to it, no session id, each with
// Content-Type: application/json, Accept: application/json,
// text/event-stream, MCP-Protocol-Version: <revision> and Mcp-Method:
// initialize (2026-07-28: server/discover, the _meta keys in params):
//
//   - Host: evil.example.com, Origin: http://evil.example.com — passes on
//     any 4xx;
//   - Host: <the URL's host:port>, Origin: http://<the URL's host:port> —
//     passes on any 2xx (the initialize it carries opens a session nobody
//     closes).
//
// On Node.js 20 the suite's CLI fails to load (it imports fs.globSync, new in
// Node 22); Run loads it with a module hook that supplies one (nodeshim/).
package conformance

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// Package is the npm package of the suite at 0.2.0-alpha.11, pinned in
// testdata/npm; Run and RunClient use [PackageAlpha12] unless told.
const Package = "@modelcontextprotocol/conformance"

// Leg is one run of the suite: a spec revision's requirements against the
// everything server in the mode that revision needs.
type Leg struct {
	Requirements string // the --requirements revision
	Stateless    bool   // how StartEverything runs the server for it
}

// Legs are the runs go-sdk v1.8.0's CI makes (.github/workflows/conformance.yml):
// 2025-11-25 against the stateful server (server-initiated sampling and
// elicitation need a session), 2026-07-28 against the stateless one.
var Legs = []Leg{
	{Requirements: "2025-11-25", Stateless: false},
	{Requirements: "2026-07-28", Stateless: true},
}

// Options select what Run runs. The zero value runs the suite's default
// ("active") selection at each scenario's own revision.
type Options struct {
	// Package is the suite's npm package (Package or PackageAlpha12); "" =
	// PackageAlpha12.
	Package string
	// Requirements, if set, runs the scenarios this spec revision requires
	// (plus its unscored ones), at that revision: --requirements.
	Requirements string
	// Scenarios, if set, runs only these, one suite run each (--scenario);
	// with SpecVersion they run at that revision, else at their default.
	// Requirements is ignored then.
	Scenarios []string
	// SpecVersion is --spec-version for Scenarios ("" = the suite's choice:
	// 2026-07-28 for scenarios introduced in it, else 2025-11-25).
	SpecVersion string
	// Timeout bounds each suite run (0 = 5 minutes); a run cut short fails t.
	Timeout time.Duration
}

// Result is one scenario's outcome.
type Result struct {
	Passed, Failed, Warnings int
	// Failures are the failed checks, "<check id>: <error message>";
	// Warned the checks that warned, the same way.
	Failures, Warned []string
}

// OK reports whether the scenario passed: no check failed.
func (r Result) OK() bool { return r.Failed == 0 }

func (r Result) String() string {
	s := fmt.Sprintf("%d passed, %d failed", r.Passed, r.Failed)
	if r.Warnings > 0 {
		s += fmt.Sprintf(", %d warnings", r.Warnings)
	}
	if len(r.Failures) > 0 {
		s += ": " + strings.Join(r.Failures, "; ")
	}
	return s
}

//go:embed nodeshim/*.mjs
var nodeShim embed.FS

// Run runs the suite's server scenarios against the MCP endpoint url (the
// suite can reach only what it can address: for a listener that needs a
// token, pass a [Proxy]) and returns each scenario's result by name. It
// fails t if the suite cannot run or reports no scenario; a missing node or
// suite skips t (fails it under MCPX_REQUIRE_DEPS=1).
func Run(t testing.TB, url string, o Options) map[string]Result {
	t.Helper()
	node := testenv.Node(t)
	bin := testenv.NPMPackageBin(t, cmpOr(o.Package, PackageAlpha12))
	dir := t.TempDir()
	shim := writeShim(t, filepath.Join(dir, "nodeshim"))
	out := filepath.Join(dir, "results")
	base := []string{"--import", shim, bin, "server", "--url", url, "--output-dir", out}
	var runs [][]string
	switch {
	case len(o.Scenarios) > 0:
		for _, s := range o.Scenarios {
			args := append(slices.Clip(base), "--scenario", s)
			if o.SpecVersion != "" {
				args = append(args, "--spec-version", o.SpecVersion)
			}
			runs = append(runs, args)
		}
	case o.Requirements != "":
		runs = append(runs, append(slices.Clip(base), "--requirements", o.Requirements))
	default:
		runs = append(runs, base)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	var logs strings.Builder
	for _, args := range runs {
		logs.WriteString(suite(t, node, args, dir, timeout))
	}
	res, err := readResults(out)
	if err != nil {
		t.Fatalf("conformance: reading the results: %v\n%s", err, tail(logs.String(), 4000))
	}
	if len(res) == 0 {
		t.Fatalf("conformance: the suite reported no scenario against %s:\n%s", url, tail(logs.String(), 4000))
	}
	return res
}

// suite runs the suite's CLI once and returns its output. Its exit status is
// not a verdict (see the package doc); only a run that timed out or could
// not start fails t.
func suite(t testing.TB, node string, args []string, dir string, timeout time.Duration) string {
	t.Helper()
	return suiteEnv(t, node, args, dir, timeout, nil)
}

// suiteEnv is suite with env added to the suite's environment.
func suiteEnv(t testing.TB, node string, args []string, dir string, timeout time.Duration, env []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir // it writes nothing else, but keep it out of the tree
	cmd.Env = append(append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0", proctest.Env(t)), env...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("conformance: %s did not finish within %v:\n%s", strings.Join(args[2:], " "), timeout, tail(string(out), 4000))
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("conformance: running %s: %v", node, err)
	}
	return string(out)
}

// writeShim copies nodeshim/ into dir and returns the path for --import.
func writeShim(t testing.TB, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := nodeShim.ReadDir("nodeshim")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := nodeShim.ReadFile("nodeshim/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "register.mjs")
}

// resultDir is how the suite names a scenario's output directory:
// server-<scenario>-<ISO time with dashes>.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// check is the part of one entry of checks.json that Run reads.
// count adds a scenario's checks to r.
func (r *Result) count(checks []check) {
	for _, c := range checks {
		switch c.Status {
		case "SUCCESS":
			r.Passed++
		case "FAILURE":
			r.Failed++
			r.Failures = append(r.Failures, c.ID+": "+c.ErrorMessage)
		case "WARNING":
			r.Warnings++
			r.Warned = append(r.Warned, c.ID+": "+c.ErrorMessage)
		}
	}
}

type check struct {
	ID           string `json:"id"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, INFO, SKIPPED
	ErrorMessage string `json:"errorMessage"`
}

// readResults reads every scenario's checks.json under dir. A scenario run
// more than once (several Scenarios runs) adds up its checks.
func readResults(dir string) (map[string]Result, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return map[string]Result{}, nil
	}
	if err != nil {
		return nil, err
	}
	res := make(map[string]Result)
	for _, e := range entries {
		m := resultDir.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			return nil, err
		}
		var checks []check
		if err := json.Unmarshal(data, &checks); err != nil {
			return nil, fmt.Errorf("%s/checks.json: %w", e.Name(), err)
		}
		r := res[m[1]]
		r.count(checks)
		res[m[1]] = r
	}
	return res, nil
}

// Passing returns the names of the scenarios that passed, sorted.
func Passing(res map[string]Result) []string {
	var names []string
	for name, r := range res {
		if r.OK() {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Lost returns the scenarios that pass in direct but not in through (failed
// there, or not run), sorted: what a transparent proxy must never lose.
func Lost(direct, through map[string]Result) []string {
	var lost []string
	for _, name := range Passing(direct) {
		if r, ok := through[name]; !ok || !r.OK() {
			lost = append(lost, name)
		}
	}
	return lost
}

// Table formats res as one line per scenario, sorted, for logs and golden
// files: "ok   name" or "FAIL name: <failed checks>".
func Table(res map[string]Result) string {
	names := make([]string, 0, len(res))
	for name := range res {
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		if r := res[name]; r.OK() {
			fmt.Fprintf(&b, "ok   %s\n", name)
		} else {
			fmt.Fprintf(&b, "FAIL %s\n", name)
		}
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// NewWarnings returns, sorted, "<scenario>: <check>: <message>" for each
// check that warns in through and not in direct, of the scenarios that
// pass in both: what a transparent proxy must not add.
func NewWarnings(direct, through map[string]Result) []string {
	var more []string
	for _, name := range Passing(direct) {
		r, ok := through[name]
		if !ok || !r.OK() {
			continue
		}
		seen := map[string]int{}
		for _, w := range direct[name].Warned {
			seen[checkID(w)]++
		}
		for _, w := range r.Warned {
			if id := checkID(w); seen[id] > 0 {
				seen[id]--
				continue
			}
			more = append(more, name+": "+w)
		}
	}
	slices.Sort(more)
	return more
}

// checkID is the check id of a "<check id>: <message>" of Warned.
func checkID(w string) string {
	id, _, _ := strings.Cut(w, ": ")
	return id
}
