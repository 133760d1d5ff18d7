package conformance

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/testenv"
)

// PackageAlpha12 is the suite at 0.2.0-alpha.12, pinned in testdata/npm
// under this alias beside Package (alpha.11): the one the tests run. Its
// server scenarios are alpha.11's and the skills extension's; its client
// scenarios add the 2026-07-28 ones of issue 33 (authorization,
// request metadata, SEP-2243 headers).
const PackageAlpha12 = "conformance-alpha12"

// ClientOptions select what RunClient runs.
type ClientOptions struct {
	// Package is the suite's npm package (Package or PackageAlpha12); "" =
	// PackageAlpha12.
	Package string
	// Scenarios are run one suite run each (--scenario); required.
	Scenarios []string
	// SpecVersion is --spec-version ("" = each scenario's own).
	SpecVersion string
	// ClientTimeout is the suite's --timeout for the client command (0 =
	// its default, 30 s); Timeout bounds each whole suite run (0 = 3
	// minutes).
	ClientTimeout, Timeout time.Duration
	// Env is added to the suite's environment, which the client command
	// inherits.
	Env []string
}

// RunClient runs the suite's client scenarios with command as the client:
// the suite starts each scenario's servers, then runs command with the
// MCP endpoint's URL as its last argument (and MCP_CONFORMANCE_SCENARIO,
// MCP_CONFORMANCE_CONTEXT in its environment). It returns each scenario's
// result by name, and fails t if the suite cannot run.
func RunClient(t testing.TB, command string, o ClientOptions) map[string]Result {
	t.Helper()
	node := testenv.Node(t)
	bin := testenv.NPMPackageBin(t, cmpOr(o.Package, PackageAlpha12))
	dir := t.TempDir()
	shim := writeShim(t, filepath.Join(dir, "nodeshim"))
	out := filepath.Join(dir, "results")
	timeout := cmpOr(o.Timeout, 3*time.Minute)
	var logs strings.Builder
	for _, s := range o.Scenarios {
		args := []string{"--import", shim, bin, "client", "--command", command, "--scenario", s, "--output-dir", out}
		if o.SpecVersion != "" {
			args = append(args, "--spec-version", o.SpecVersion)
		}
		if o.ClientTimeout > 0 {
			args = append(args, "--timeout", strconv.FormatInt(o.ClientTimeout.Milliseconds(), 10))
		}
		logs.WriteString(suiteEnv(t, node, args, dir, timeout, o.Env))
	}
	res, err := readClientResults(out)
	if err != nil {
		t.Fatalf("conformance: reading the results: %v\n%s", err, tail(logs.String(), 4000))
	}
	if len(res) == 0 {
		t.Fatalf("conformance: the suite reported no client scenario:\n%s", tail(logs.String(), 4000))
	}
	t.Logf("conformance client runs:\n%s", tail(logs.String(), 20000))
	return res
}

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}

// clientResultDir is how the suite names a client scenario's output
// directory, under the output directory: <scenario>-<ISO time with
// dashes>, the scenario's "/" making directories ("auth/metadata-default-…").
var clientResultDir = regexp.MustCompile(`^(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// readClientResults reads every checks.json under dir.
func readClientResults(dir string) (map[string]Result, error) {
	res := map[string]Result{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if os.IsNotExist(err) {
			return filepath.SkipAll
		}
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return err
		}
		rel, err := filepath.Rel(dir, filepath.Dir(path))
		if err != nil {
			return err
		}
		m := clientResultDir.FindStringSubmatch(filepath.ToSlash(rel))
		if m == nil {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var checks []check
		if err := json.Unmarshal(data, &checks); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		r := res[m[1]]
		r.count(checks)
		res[m[1]] = r
		return nil
	})
	return res, err
}

// ScenarioNames returns the names of res, sorted.
func ScenarioNames(res map[string]Result) []string {
	var names []string
	for n := range res {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
