package scripts

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestInterpreter: a JS or TS file has none; the configured command for an
// extension wins over the shebang, which is read as the kernel reads it
// (the interpreter and one argument); a file with neither is an error
// naming it and both fixes.
func TestInterpreter(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		testenv.WriteFile(t, p, body)
		return p
	}
	conf := map[string]string{".py": "python3 -u"}
	for _, c := range []struct {
		path string
		want []string
	}{
		{file("a.ts", "#!/usr/bin/env -S deno run\n"), nil},
		{file("a.mjs", "x\n"), nil},
		{file("a.py", "#!/usr/bin/python2\n"), []string{"python3", "-u"}},
		{file("a.sh", "#!/bin/sh\necho\n"), []string{"/bin/sh"}},
		{file("a.bash", "#! /usr/bin/env  bash\r\n"), []string{"/usr/bin/env", "bash"}},
		{file("tool", "#!/usr/bin/env -S python3 -u\n"), []string{"/usr/bin/env", "-S python3 -u"}},
	} {
		got, err := Interpreter(c.path, conf)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Interpreter(%s) = %q, %v; want %q", filepath.Base(c.path), got, err, c.want)
		}
	}
	p := file("x.rb", "puts 1\n")
	_, err := Interpreter(p, conf)
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "#!/bin/sh") || !strings.Contains(err.Error(), `{".rb": "<command>"}`) {
		t.Errorf("a file with no interpreter: %v", err)
	}
	if _, err := Interpreter(filepath.Join(dir, "none.sh"), nil); err == nil {
		t.Error("a missing file: no error")
	}
}
