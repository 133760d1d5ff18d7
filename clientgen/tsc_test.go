package clientgen_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"mcpx.dev/mcpx/clientgen"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// tsc runs the pinned TypeScript compiler (testdata/npm) with --strict
// --noEmit over files in dir and returns its output and whether it passed.
func tsc(t *testing.T, dir string, files ...string) (string, bool) {
	t.Helper()
	node := testenv.Node(t)
	bin := testenv.NPMPackageBin(t, "typescript")
	args := append([]string{bin, "--strict", "--noEmit", "--pretty", "false",
		"--target", "es2022", "--module", "esnext", "--moduleResolution", "bundler",
		"--allowImportingTsExtensions", "--noUnusedLocals", "false", "--types", ""}, files...)
	cmd := exec.Command(node, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatalf("running tsc: %v", err)
	}
	return string(out), err == nil
}

// generated writes the compiler's output for every real server and every
// case into dir, as <server>.ts and <case>.ts, and returns the file names.
func generated(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	write := func(name string, src []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	for server, tools := range corpus(t) {
		f, _ := clientgen.Compile(tools)
		write(server+".ts", f.Source)
	}
	for name, opts := range typesCases(t) {
		f, _, _ := clientgen.Types(opts)
		write("types-"+name, f.Source)
	}
	for _, path := range caseFiles(t) {
		ar, err := txtar.ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, _ := clientgen.Compile(caseTools(t, ar))
		write(strings.TrimSuffix(filepath.Base(path), ".txtar")+".ts", f.Source)
	}
	slices.Sort(names)
	return names
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTypeScriptAccepts checks that tsc --strict accepts every generated
// file, and testdata/tsc/use.ts: a program that uses the types and whose
// @ts-expect-error lines must each be type errors.
func TestTypeScriptAccepts(t *testing.T) {
	dir := t.TempDir()
	files := generated(t, dir)
	copyFile(t, filepath.Join("testdata", "tsc", "use.ts"), filepath.Join(dir, "use.ts"))
	if out, ok := tsc(t, dir, append(files, "use.ts")...); !ok {
		t.Fatalf("tsc rejected the generated files or use.ts:\n%s", out)
	}
}

// TestTypeScriptRejectsWrongUse checks that tsc reports an error on each
// line of testdata/tsc/wrong.ts marked "error here", and nowhere else.
func TestTypeScriptRejectsWrongUse(t *testing.T) {
	dir := t.TempDir()
	generated(t, dir)
	src, err := os.ReadFile(filepath.Join("testdata", "tsc", "wrong.ts"))
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join("testdata", "tsc", "wrong.ts"), filepath.Join(dir, "wrong.ts"))
	var want []int
	for i, line := range strings.Split(string(src), "\n") {
		if strings.HasSuffix(line, "// error here") {
			want = append(want, i+1)
		}
	}
	out, ok := tsc(t, dir, "wrong.ts")
	if ok {
		t.Fatalf("tsc accepted wrong.ts:\n%s", out)
	}
	var got []int
	for _, m := range regexp.MustCompile(`(?m)^wrong\.ts\((\d+),\d+\): error`).FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		if !slices.Contains(got, n) {
			got = append(got, n)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("tsc reported errors on lines %v of wrong.ts, want %v:\n%s", got, want, out)
	}
}

// TestTypeScriptRandomSchemas compiles random schemas built from every
// keyword the compiler knows (fixed seeds, so failures reproduce) and checks
// that tsc accepts the result: whatever the schema, the output is valid.
func TestTypeScriptRandomSchemas(t *testing.T) {
	var tools []clientgen.Tool
	for seed := range 300 {
		g := &schemaGen{seed: uint64(seed) + 1}
		tools = append(tools, clientgen.Tool{
			Server: fmt.Sprintf("s%d", seed%7), Name: g.name(),
			InputSchema: []byte(g.root()), OutputSchema: []byte(g.root()),
		})
	}
	f, _ := clientgen.Compile(tools)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "random.ts"), f.Source, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, ok := tsc(t, dir, "random.ts"); !ok {
		// Show the lines tsc named, so a failure can be read from the log.
		lines := bytes.Split(f.Source, []byte("\n"))
		var ctx strings.Builder
		for _, m := range regexp.MustCompile(`random\.ts\((\d+),`).FindAllStringSubmatch(out, 20) {
			n, _ := strconv.Atoi(m[1])
			if n >= 1 && n <= len(lines) {
				fmt.Fprintf(&ctx, "%d: %s\n", n, lines[n-1])
			}
		}
		t.Fatalf("tsc rejected the output for random schemas:\n%s\n%s", out, ctx.String())
	}
}
