package jsrtest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/jsrtest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestDeno has real deno import a package of the registry, twice: the
// second run is served from DENO_DIR.
func TestDeno(t *testing.T) {
	// The deno package's bin is a node wrapper; its binary lies beside it.
	deno := filepath.Join(filepath.Dir(testenv.NPMPackageBin(t, "deno")), "deno")
	reg := jsrtest.Start(t,
		jsrtest.Package{Scope: "mcpxtest", Name: "greet", Version: "1.0.0", Files: map[string]string{
			"mod.ts":   `import { punct } from "./punct.ts"; export function greet(s: string): string { return "hello, " + s + punct; }`,
			"punct.ts": `export const punct = "!";`,
		}},
	)
	dir := t.TempDir()
	script := filepath.Join(dir, "main.ts")
	if err := os.WriteFile(script, []byte(`import { greet } from "jsr:@mcpxtest/greet@1"; console.log(greet("jsr"));`), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		cmd := exec.Command(deno, "run", "--no-lock", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "JSR_URL="+reg.URL, "DENO_DIR="+filepath.Join(dir, "deno"), "NO_COLOR=1", "DENO_NO_UPDATE_CHECK=1")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i+1, err, stderr.String())
		}
		if got := strings.TrimSpace(string(out)); got != "hello, jsr!" {
			t.Errorf("run %d printed %q, want %q", i+1, got, "hello, jsr!")
		}
	}
	if n := reg.Fetches("@mcpxtest/greet"); n != 1 {
		t.Errorf("meta.json fetched %d times, want 1 (the second run from DENO_DIR)", n)
	}
}
