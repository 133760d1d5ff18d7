package main

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"mcpx.dev/mcpx/internal/testing/proctest"
)

// readmeExpect is what each command of README.md's Scripts section prints
// (regexps matched against stdout and, when not "", stderr). A command the
// README gains must be added here, so that an example that does not run as
// written, or does not print what its comment says, fails the test.
var readmeExpect = map[string]struct{ stdout, stderr string }{
	`mcpx run greet --json-args '{"name":"Ada"}'`:        {`^\{"type":"text","text":"hi Ada"\}\n$`, ""},
	`mcpx run ./tool.ts --export main a b`:               {`^\["a","b"\]\n$`, ""},
	`mcpx run ./tool.ts --export main -- --verbose`:      {`^\["--verbose"\]\n$`, ""},
	`mcpx run greet --json-args '{"name":"Ada"}' --json`: {`(?s)^\{.*"exitCode": 0,.*"result": \{\s+"type": "text",\s+"text": "hi Ada"\s+\},\s+"calls": \[\s+\{\s+"server": "demo",\s+"tool": "echo",`, ""},
	`mcpx scripts`: {`(?m)^greet +\S+/\.config/mcpx/scripts/greet\.ts +-$`, ""},
	`mcpx exec 'return (await demo.add({a:1,b:2})).structuredContent'`:                                  {`^\{"sum":3\}\n$`, ""},
	`mcpx exec 'demo.add({a:1,b:2})' --json`:                                                            {`(?s)"result": \{.*"content": .*"structuredContent": \{\s+"sum": 3`, ""},
	`echo 'return 6*7' | mcpx exec`:                                                                     {`^42\n$`, ""},
	`mcpx exec 'const { default: isNumber } = await import("npm:is-number@7.0.0"); return isNumber(5)'`: {`^true\n$`, ""}, // from registry.npmjs.org
	`mcpx run status`:                              {`^$`, `^\{"time":"[^"]+","level":"info","msg":"status: ok","template":"status: \{status\}","job":"nightly","status":"ok","session":"[^"]+","pid":\d+,"cwd":"[^"]+","mcpxVersion":"[^"]+","elapsedMs":\d+\}\n$`},
	`MCPX_LOG_LEVEL=warn mcpx run status`:          {`^$`, `^$`},
	`mcpx run ./hello.sh Ada`:                      {`"content":\[\{"type":"text","text":"hi Ada"\}\]`, ""},
	`mcpx run ./hello.sh Ada --env GREETING=hello`: {`"text":"hello Ada"`, ""},
	`mcpx run greet --json-args '{"name":"Ada"}' --prefix - --prefix 'const t0 = Date.now()' --suffix 'console.error(script.name, result.ok, Date.now() - t0, "ms")'`: {`^\{"type":"text","text":"hi Ada"\}\n$`, `(?m)^\{"time":"[^"]+","level":"error","msg":"greet true \d+ ms"`},
}

// readmeFixtures are files the README's examples use but do not show.
var readmeFixtures = map[string]string{
	"tool.ts": "export default (): string => \"the default export\";\nexport const main = (args: string[]): string[] => args;\n",
}

// TestReadmeScripts runs every command of README.md's Scripts section as
// written (an indented line starting with `mcpx `, or a pipe into one),
// with the files its code blocks name (a first line `// path`), on deno,
// bun and node, against the daemon and the demo server, and checks each
// prints what readmeExpect says. $MCPX_TEST_README names another README
// to check (a draft of the section).
func TestReadmeScripts(t *testing.T) {
	proctest.CheckNoLeaks(t)
	marker := proctest.Env(t)
	readme, err := os.ReadFile(cmp.Or(os.Getenv("MCPX_TEST_README"), filepath.Join("..", "..", "README.md")))
	if err != nil {
		t.Fatal(err)
	}
	script, err := readmeScript(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "readme.txtar"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, rt := range scriptRuntimes(t) {
		t.Run(rt.name, func(t *testing.T) {
			testscript.Run(t, runParams(dir, rt, marker))
		})
	}
}

var (
	readmeFile    = regexp.MustCompile("(?s)```(?:ts|js)\n// (\\S+)\n(.*?)```")
	readmeShell   = regexp.MustCompile("(?s)```sh\n(#![^\n]*\n)# (\\S+)\n(.*?)```") // the shebang, then "# path"
	readmeCommand = regexp.MustCompile(`(?m)^    ((?:[A-Z_]+=\S* )*(?:echo .* \| )?mcpx .*?)(?:\s+#.*)?$`)
)

// readmeScript is the testscript of README.md's Scripts section: the
// daemon with the demo server, the files of its code blocks, and each
// command with its expected stdout.
func readmeScript(readme string) (string, error) {
	_, sec, ok := strings.Cut(readme, "\n## Scripts\n")
	if !ok {
		return "", fmt.Errorf("README.md has no Scripts section")
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	var b, files strings.Builder
	b.WriteString("exec sh -c 'exec mcpx serve 2> serve.log' &daemon&\nwaitsock $SOCK\ncd proj\n\n")
	files.WriteString("-- config/mcpx/config.json --\n{\"servers\": {\"demo\": {\"command\": \"mcpx\", \"args\": [\"demo-server\"]}}}\n")
	shown := map[string]bool{}
	for _, m := range readmeFile.FindAllStringSubmatch(sec, -1) {
		shown[m[1]] = true
		fmt.Fprintf(&files, "-- proj/%s --\n%s", m[1], m[2])
	}
	for _, m := range readmeShell.FindAllStringSubmatch(sec, -1) {
		shown[m[2]] = true
		fmt.Fprintf(&files, "-- proj/%s --\n%s%s", m[2], m[1], m[3])
	}
	for name, src := range readmeFixtures {
		if !shown[name] {
			fmt.Fprintf(&files, "-- proj/%s --\n%s", name, src)
		}
	}
	cmds := readmeCommand.FindAllStringSubmatch(sec, -1)
	if len(cmds) == 0 {
		return "", fmt.Errorf("README.md's Scripts section shows no mcpx command")
	}
	var missing []string
	for _, m := range cmds {
		cmd := strings.TrimSpace(m[1])
		want, ok := readmeExpect[cmd]
		if !ok {
			missing = append(missing, cmd)
			continue
		}
		fmt.Fprintf(&b, "# %s\nexec sh -c %s\nstdout %s\n", cmd, quoteTS(cmd), quoteTS(want.stdout))
		if want.stderr != "" {
			fmt.Fprintf(&b, "stderr %s\n", quoteTS(want.stderr))
		}
		b.WriteString("\n")
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return "", fmt.Errorf("README.md's Scripts section runs commands readmeExpect does not know; add what each prints:\n%s", strings.Join(missing, "\n"))
	}
	b.WriteString("kill -INT daemon\nwait daemon\n\n")
	return b.String() + files.String(), nil
}

// quoteTS quotes s as one testscript word.
func quoteTS(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
