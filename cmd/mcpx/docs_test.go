package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"mcpx.dev/mcpx/internal/paths"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestDocs runs every shell example of README.md and docs/*.md as written:
// each fenced shell block (sh, bash, console or none) with an mcpx command
// in it, one page at a time, in order, against a real daemon of that page
// (the built-in demo server, or the page's config in docPages), and checks
// that each command exits as docExpect says (0 unless it says otherwise)
// and prints what it says. A command the page shows the output of (a
// trailing "# …" comment, or "# …" lines after it) must be in docExpect.
// A block that cannot run here carries <!-- not run: why --> on the line
// before it; any other block with an mcpx command runs, or the test fails.
// The commands run in one shell per page, from $WORK/proj (each block starts
// there again), with $HOME and the XDG directories in $WORK; "/tmp/" in a
// command is $WORK/tmp/, so the tour's worktrees stay in the test's
// directory. $MCPX_TEST_README names another README.md to check (a draft).
func TestDocs(t *testing.T) {
	t.Parallel() // a process test (plain_test.go)
	proctest.CheckNoLeaks(t)
	marker := proctest.Env(t)
	pages := docPageFiles(t)
	used := map[string]bool{}
	var notRun []string
	for _, page := range pages {
		data, err := os.ReadFile(page.path)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := docBlocks(string(data))
		if err != nil {
			t.Fatalf("%s: %v", page.name, err)
		}
		var run []docBlock
		for _, b := range blocks {
			switch {
			case b.notRun != "":
				notRun = append(notRun, fmt.Sprintf("%s:%d: %s", page.name, b.line, b.notRun))
			case len(b.cmds) > 0:
				run = append(run, b)
			}
		}
		if len(run) == 0 {
			continue
		}
		cfg := docPages[page.name]
		script, missing := docScript(t, page.name, cfg, run, data, used)
		if len(missing) > 0 {
			t.Errorf("%s shows what these commands print, but docExpect does not say; add each:\n%s", page.name, strings.Join(missing, "\n"))
			continue
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "page.txtar"), []byte(script), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Run(page.name, func(t *testing.T) {
			rts := scriptRuntimes(t)
			if !cfg.runtimes {
				rts = rts[2:] // node: the page runs no script
			}
			for _, rt := range rts {
				t.Run(rt.name, func(t *testing.T) {
					p := runParams(dir, rt, marker)
					p.Setup = docSetup(p.Setup)
					p.Cmds["docchecks"] = docChecks
					testscript.Run(t, p)
				})
			}
		})
	}
	for cmd := range docExpect {
		if !used[cmd] {
			t.Errorf("docExpect has %q, which no page runs any more: remove it", cmd)
		}
	}
	t.Logf("not run:\n%s", strings.Join(notRun, "\n"))
}

type docPageFile struct{ name, path string }

// docPageFiles are README.md (or $MCPX_TEST_README) and docs/*.md.
func docPageFiles(t *testing.T) []docPageFile {
	root := filepath.Join("..", "..")
	out := []docPageFile{{"README.md", cmp.Or(os.Getenv("MCPX_TEST_README"), filepath.Join(root, "README.md"))}}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		out = append(out, docPageFile{"docs/" + filepath.Base(d), d})
	}
	return out
}

// docPage is how one page's examples run.
type docPage struct {
	// config is the daemon's config ($XDG_CONFIG_HOME/mcpx/config.json);
	// "" = none: the built-in demo server. $EVERYTHING is server-everything's
	// entry point, from testdata/npm.
	config string
	// files are files the examples use but do not show, by path in $WORK.
	files map[string]string
	// runtimes: run the page on deno, bun and node (it runs scripts).
	runtimes bool
}

// everythingConfig serves the demo server and server-everything, which
// the pages configure as `npx -y @modelcontextprotocol/server-everything`:
// here its copy in testdata/npm, run by node, since the test has no
// network.
const everythingConfig = `{"servers": {
  "demo": {"command": "mcpx", "args": ["demo-server"]},
  "everything": {"command": "node", "args": ["$EVERYTHING"]}
}}`

var docPages = map[string]docPage{
	"docs/calling.md": {config: everythingConfig},
	"docs/scripts.md": {
		config:   `{"servers": {"demo": {"command": "mcpx", "args": ["demo-server"]}}}`,
		runtimes: true,
		files: map[string]string{
			"proj/tool.ts": "export default (): string => \"the default export\";\nexport const main = (args: string[]): string[] => args;\n",
		},
	},
	"docs/install.md": {files: map[string]string{
		"home/work/mcpx.json": `{"servers": {"demo": {"command": "mcpx", "args": ["demo-server"]}}}`,
	}},
	"docs/scopes.md": {config: `{"servers": {"browser": {"command": "mcpx", "args": ["demo-server"], "scope": "session"}}}`},
	"docs/trust.md":  {files: map[string]string{"home/src/.keep": ""}},
	"docs/config.md": {files: map[string]string{"proj/.config/mcpx/.keep": ""}},
}

// docWant is what a command must do: exit with code and print what
// stdout and stderr match (regexps; "" = anything).
type docWant struct {
	stdout, stderr string
	code           int
	// follow: the command runs until it is stopped (--follow); it runs for
	// two seconds, then is interrupted.
	follow bool
}

// docExpect is what each command of the pages prints, by the command as
// written (its "# …" comment left out), or by "page: command" where the
// same command prints otherwise on another page. A command whose output a page
// shows must be here, so that an example that no longer prints what its
// page says fails; others are here only to say more than "exits 0".
var docExpect = map[string]docWant{
	// README.md: the tour. $WORK/tmp stands for /tmp (see TestDocs).
	`cd /tmp/app          && mcpx call demo.cwd`: {stdout: `/tmp/app\n$`},
	`cd /tmp/app-feature  && mcpx call demo.cwd`: {stdout: `/tmp/app-feature\n$`},
	`mcpx call demo.roots`:                       {stdout: `^\[\{"name":"app-feature","uri":"file://\S*/tmp/app-feature"\}\]\n$`},
	`mcpx call demo.echo '{"message":"hi"}'`:     {stdout: `^hi\n$`},
	`mcpx status`:                                {stdout: `(?s)^daemon pid \d+ \S+, up \d+s, socket \S+, tcp 127\.0\.0\.1:\d+, config built-in demo server\n.*ID +SERVER +KEY +ROOT +CWD +PID .*STATE\n.*demo-1 +demo +worktree:\S*/tmp/app .*ready\n.*demo-2 +demo +worktree:\S*/tmp/app-feature .*ready\n.*pool: 2 spawns, 0 restarts, 0 start failures, 0 crashes, 0 wedged, 0 evictions, 0 reaps, 0 refused \(full\), 0 waiting`},
	`mcpx daemon info`:                           {stdout: `(?m)^pid +\d+$(?s:.*)^socket +\S+$(?s:.*)^url +http://127\.0\.0\.1:\d+$(?s:.*)^config +\(the built-in demo server\)$(?s:.*)^record +\S+/daemon\.json$(?s:.*)^token +\S+(?s:.*)^log +\S+/logs/mcpx\.jsonl$`},
	`mcpx reload`:                                {stdout: `reloaded`},
	`mcpx events`:                                {stdout: `(?m) spawn .*demo`},
	`mcpx whoami`:                                {stdout: `owner`},
	`mcpx sandbox show demo`:                     {stdout: `(?m)^server: +demo$(?s:.*)^sandbox: +\S`},
	`mcpx stats --by tool`:                       {stdout: `(?m)^ +TOOL +CALLS +FAILED .* P50 +P95 +P99$(?s:.*)^ +demo\.echo +1 `},
	`mcpx log --follow`:                          {follow: true, stdout: `mcpx serving`},
	`mcpx doctor`:                                {stdout: `.`},
	`mcpx daemon stop`:                           {stdout: `stopped`},

	// docs/calling.md
	`mcpx tools`: {stdout: `(?m)^SERVER +TOOL +DESCRIPTION$(?s:.*)^everything +echo `},
	`echo '{"a":1,"b":2}' | mcpx call demo.add -`:                         {stdout: `^3\n$`},
	`mcpx call --json demo.add '{"a":1,"b":2}'`:                           {stdout: `"structuredContent":\s*\{\s*"sum":\s*3`},
	`mcpx call --log-level debug everything.toggle-simulated-logging`:     {stdout: `^Started simulated, random-leveled logging`},
	`mcpx resources everything`:                                           {stdout: `(?m)^URI +NAME +MIME TYPE +DESCRIPTION$`},
	`mcpx resources --templates everything`:                               {stdout: `(?m)^demo://resource/dynamic/text/\{resourceId\} `},
	`mcpx resource everything demo://resource/dynamic/blob/5 -o blob.bin`: {stdout: `^$`, stderr: `^wrote \d+ bytes to blob.bin\n$`},
	`mcpx resource --json everything demo://resource/dynamic/blob/5`:      {stdout: `^\{"contents":\[\{"uri":"demo://resource/dynamic/blob/5",.*"blob":"[A-Za-z0-9+/=]+"\}\]\}\n$`},
	`mcpx prompts everything`:                                             {stdout: `(?m)^args-prompt +city \[state\] `},
	`mcpx complete everything --prompt completable-prompt department S`:   {stdout: `^Sales\nSupport\n$`},
	`mcpx tasks result "$id"`:                                             {stdout: `Research Report: tides`},
	`mcpx tasks cancel "$id"`:                                             {stdout: `(?m)^status: +cancelled$`},
	`mcpx search echo`:                                                    {stdout: `(?m)^SCORE +SERVER +TOOL +DESCRIPTION\n\d+ +everything +echo .*\n\d+ +demo +echo `},
	`mcpx search --explain sum`:                                           {stdout: `(?m)^\d+ +everything +get-sum .*\n +"sum" \d+ +name contains`},
	`mcpx catalog --budget 200`:                                           {stdout: `(?m)^everything: 16 tools`},
	`mcpx types demo.add`:                                                 {stdout: `export namespace demo`},
	`mcpx types --only echo,add demo`:                                     {stdout: `(?s)AddInput.*EchoInput`},
	`mcpx types --format markdown demo`:                                   {stdout: `(?m)^#`},

	// docs/scripts.md (was the README's Scripts section)
	`mcpx run greet --json-args '{"name":"Ada"}'`:        {stdout: `^\{"type":"text","text":"hi Ada"\}\n$`},
	`mcpx run ./tool.ts --export main a b`:               {stdout: `^\["a","b"\]\n$`},
	`mcpx run ./tool.ts --export main -- --verbose`:      {stdout: `^\["--verbose"\]\n$`},
	`mcpx run greet --json-args '{"name":"Ada"}' --json`: {stdout: `(?s)^\{.*"exitCode": 0,.*"result": \{\s+"type": "text",\s+"text": "hi Ada"\s+\},\s+"calls": \[\s+\{\s+"server": "demo",\s+"tool": "echo",`},
	`mcpx scripts`:                    {stdout: `(?m)^demo:shout +\S+/\.config/mcpx/scripts/demo/shout\.ts +-\n(?s:.*)^greet +\S+/\.config/mcpx/scripts/greet\.ts +-$`},
	`mcpx run demo:shout hello there`: {stdout: `^"HELLO THERE"\n$`},
	`mcpx exec 'return (await demo.add({a:1,b:2})).structuredContent'`:                                  {stdout: `^\{"sum":3\}\n$`},
	`mcpx exec 'demo.add({a:1,b:2})' --json`:                                                            {stdout: `(?s)"result": \{.*"content": .*"structuredContent": \{\s+"sum": 3`},
	`echo 'return 6*7' | mcpx exec`:                                                                     {stdout: `^42\n$`},
	`mcpx exec 'const { default: isNumber } = await import("npm:is-number@7.0.0"); return isNumber(5)'`: {stdout: `^true\n$`}, // from registry.npmjs.org
	`mcpx run status`:                     {stdout: `^$`, stderr: `^\{"time":"[^"]+","level":"info","msg":"status: ok","template":"status: \{status\}","job":"nightly","status":"ok","session":"[^"]+","pid":\d+,"cwd":"[^"]+","mcpxVersion":"[^"]+","elapsedMs":\d+\}\n$`},
	`MCPX_LOG_LEVEL=warn mcpx run status`: {stdout: `^$`, stderr: `^$`},
	`MCPX_LOG_LEVEL=debug mcpx exec 'await demo.echo({ message: "hi" })'`: {stderr: `(?m)^\{"time":"[^"]+","level":"debug","msg":"call demo\.echo: ok","template":"[^"]+","server":"demo","tool":"echo","scope":"[a-z-]+","key":"[^"]+","instance":"demo-\d+","config":"[^"]+\.json","ms":\d+,"outcome":"ok","session":"[^"]+"`},
	`mcpx run ./hello.sh Ada`:                      {stdout: `"content":\[\{"type":"text","text":"hi Ada"\}\]`},
	`mcpx run ./hello.sh Ada --env GREETING=hello`: {stdout: `"text":"hello Ada"`},
	`mcpx run greet --json-args '{"name":"Ada"}' --prefix - --prefix 'const t0 = Date.now()' --suffix 'console.error(script.name, result.ok, Date.now() - t0, "ms")'`: {stdout: `^\{"type":"text","text":"hi Ada"\}\n$`, stderr: `(?m)^\{"time":"[^"]+","level":"error","msg":"greet true \d+ ms"`},

	// docs/config.md
	`mcpx config check`:                                    {stdout: `^ok: 1 server \(the built-in demo server; no config at \S+\)\n$`},
	`mcpx config check --json`:                             {stdout: `^\{"ok":true,"source":"the built-in demo server; no config at \S+","servers":1,"disabled":\[\],"problems":\[\],"warnings":\[\]\}\n$`},
	`mcpx config show`:                                     {stdout: `"demo": \{`},
	`mcpx config --defaults`:                               {stdout: `"<command server>"`},
	`mcpx config --sources`:                                {stdout: `user`},
	`mcpx config schema > .config/mcpx/config.schema.json`: {stdout: `^$`},
	`mcpx config init`:                                     {stdout: `^wrote \S+/config/mcpx/config\.schema\.json\nwrote \S+/config/mcpx/config\.json\n$`},

	// docs/install.md
	`mcpx service install --dry-run`:       {stdout: `(?m)^  systemctl --user enable --now mcpx\.service$`},
	`mcpx service status`:                  {stdout: `.`},
	`mcpx install --list`:                  {stdout: `(?m)^claude  Claude Code`},
	`mcpx install codex`:                   {stdout: `(?m)^create \[mcp_servers\.mcpx\] in \S+/\.codex/config\.toml$`},
	`mcpx install claude-desktop`:          {stdout: `(?m)^create mcpServers\.mcpx in \S+/Claude/claude_desktop_config\.json$`},
	`mcpx install claude --dry-run`:        {stdout: `would create mcpServers\.mcpx in \S+/\.claude\.json`},
	`mcpx install claude`:                  {stdout: `(?m)^create mcpServers\.mcpx in \S+/\.claude\.json$`},
	`mcpx install claude --uninstall`:      {stdout: `(?m)^remove`},
	`mcpx install claude --http`:           {stdout: `(?m)^create mcpServers\.mcpx in \S+/\.claude\.json \(file mode 0600: it holds a token\)$(?s:.*)survives the daemon's restarts`},
	`mcpx token add scripts > scripts.tok`: {},
	`mcpx token revoke scripts`:            {stdout: `^revoked owner token scripts `},
	`mcpx call --config ~/work/mcpx.json demo.echo '{"message":"from work"}'`: {stdout: `^from work\n$`},
	`mcpx serve --config ~/work/mcpx.json --own-socket &`:                     {},
	`mcpx daemons`: {stdout: `(?m)^PID +UPTIME +INSTANCES +CONFIG +SOCKET$`},
	`mcpx call --standalone --config ~/work/mcpx.json demo.echo '{"message":"hi"}'`: {stdout: `^hi\n$`},

	// docs/api.md
	`sock=$(mcpx daemon info --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["socket"])')`:          {},
	`curl -s --unix-socket "$sock" -H "Mcpx-Cwd: $PWD" -d '{"message":"hi"}' http://mcpx/v1/servers/demo/tools/echo`: {stdout: `^\{.*"content":\[\{"type":"text","text":"hi"\}\]`},

	`curl -s -H "Authorization: Bearer $(cat "$state/token")" -H 'Mcpx-Client: curl' "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' "$state/daemon.json")/v1/servers"`: {stdout: `"name":\s*"demo"`},

	// docs/trust.md
	`mcpx token ls`:           {stdout: `(?m)^ID `},
	`mcpx token rotate`:       {stdout: `.`},
	`mcpx tools demo`:         {stdout: `(?m)^demo +echo `},
	`mcpx tools pins`:         {stdout: `(?m)^demo +echo `},
	`mcpx tools approve demo`: {stdout: `demo`},
	`mcpx tools pins demo`:    {stdout: `(?m)^demo +echo `},

	// docs/observability.md
	`docs/observability.md: mcpx status`: {stdout: `(?m)^demo-1 +demo +cwd:\S+/proj `},
	`docs/observability.md: mcpx events`: {stdout: `(?m) spawn +demo`},
	`mcpx stats --since 1h --by tool`:    {stdout: `(?m)^ +demo\.echo +1 `},
	`mcpx log --follow --server demo`:    {follow: true},

	// docs/scopes.md
	`mcpx sessions ls`: {stdout: `^no sessions`},
	`mcpx call --session s1 browser.echo '{"message":"hi"}'`:   {stdout: `^hi\n$`},
	`mcpx sessions set session:s1 --name mybrowser --idle 30m`: {stdout: `(?m)^name: +mybrowser `},
	`mcpx sessions show mybrowser`:                             {stdout: `(?m)^key: +session:s1 \(session\)$`},
	`mcpx log --session mybrowser`:                             {stdout: `(?m) spawned .*\bkey=session:s1\b`},
	`mcpx events --session mybrowser`:                          {stdout: `(?m) spawn browser session:s1 `},
	`mcpx sessions watch mybrowser`:                            {follow: true},
	`mcpx sessions stop mybrowser`:                             {stdout: `^stopped mybrowser\n$`},
	`mcpx lease run --ttl 30s -- sh -c 'echo "$MCPX_LEASE"'`:   {stdout: `^\S+\n$`},
}

// docSkip are lines of a run block the test does not run, and why.
var docSkip = map[string]string{
	"go install ./cmd/mcpx": "mcpx is on PATH already: the test binary",
}

// docBlock is a fenced shell block of a page with an mcpx command in it.
type docBlock struct {
	line   int
	notRun string   // the reason of a <!-- not run: … --> marker before it
	cmds   []docCmd // its commands, in order
}

type docCmd struct {
	line  int
	text  string // as written, without its comment
	shows bool   // the page shows its output: a comment on it, or "# …" lines after it
}

var (
	fence      = regexp.MustCompile("^(\\s*)```(\\w*)\\s*$")
	notRunMark = regexp.MustCompile(`^<!-- not run: (.+) -->$`)
	// an mcpx command: mcpx at the start of a command, after VAR=value
	// assignments, a pipe, &&, ; or $(.
	mcpxCmd = regexp.MustCompile(`(^|[|&;(]\s*|\$\(\s*|^(\w+=\S*\s+)+)mcpx(\s|$)`)
	// an indented example outside a fence: say to fence it.
	indentedMcpx = regexp.MustCompile(`^    (\w+=\S*\s+)*mcpx `)
)

// docBlocks finds a page's shell blocks that have an mcpx command.
func docBlocks(page string) ([]docBlock, error) {
	lines := strings.Split(page, "\n")
	var out []docBlock
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			if indentedMcpx.MatchString(lines[i]) && (i == 0 || strings.TrimSpace(lines[i-1]) == "" || indentedMcpx.MatchString(lines[i-1])) {
				return nil, fmt.Errorf("line %d is an indented example: put it in a fenced ```sh block, which the test runs", i+1)
			}
			continue
		}
		indent, lang := m[1], m[2]
		start := i
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		if !slices.Contains([]string{"", "sh", "bash", "shell", "console"}, lang) || len(body) == 0 || strings.HasPrefix(body[0], "#!") {
			continue // not shell, or a script file (#!, then "# path")
		}
		b := docBlock{line: start + 1}
		prev := ""
		for j := start - 1; j >= 0; j-- {
			if strings.TrimSpace(lines[j]) != "" {
				prev = strings.TrimSpace(lines[j])
				break
			}
		}
		if nm := notRunMark.FindStringSubmatch(prev); nm != nil {
			b.notRun = nm[1]
		}
		for j := 0; j < len(body); j++ {
			text := body[j]
			lineNo := start + 2 + j
			for strings.HasSuffix(text, `\`) && j+1 < len(body) {
				j++
				text = strings.TrimSuffix(text, `\`) + "\n" + body[j]
			}
			trimmed := strings.TrimSpace(text)
			switch {
			case trimmed == "":
			case strings.HasPrefix(trimmed, "#"):
				if n := len(b.cmds); n > 0 {
					b.cmds[n-1].shows = true
				}
			default:
				cmd, comment := splitComment(text)
				b.cmds = append(b.cmds, docCmd{line: lineNo, text: cmd, shows: comment})
			}
		}
		if !slices.ContainsFunc(b.cmds, func(c docCmd) bool { return mcpxCmd.MatchString(c.text) }) {
			continue
		}
		out = append(out, b)
	}
	return out, nil
}

// splitComment cuts a trailing "  # …" comment off a command line (one
// outside quotes, after a space).
func splitComment(line string) (string, bool) {
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && i > 0 && (line[i-1] == ' ' || line[i-1] == '\t'):
			return strings.TrimSpace(line[:i]), true
		}
	}
	return strings.TrimSpace(line), false
}

// docCheck is one command's expectations, for docchecks.
type docCheck struct {
	N      int    `json:"n"`
	Where  string `json:"where"`
	Cmd    string `json:"cmd"`
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	Code   int    `json:"code"`
}

// docScript is the testscript of a page's run blocks: its files and the
// daemon of its config, one shell script of every command (each writing
// its output and status to out/N.*), then the checks of docchecks. It
// returns the commands whose output the page shows and docExpect does not
// state.
func docScript(t *testing.T, page string, cfg docPage, blocks []docBlock, src []byte, used map[string]bool) (string, []string) {
	var sh, files strings.Builder
	var checks []docCheck
	var missing []string
	sh.WriteString("set -u\nmkdir -p \"$WORK/out\" \"$WORK/tmp\"\n")
	n := 0
	for _, b := range blocks {
		sh.WriteString("cd \"$WORK/proj\"\n")
		for _, c := range b.cmds {
			if _, skip := docSkip[c.text]; skip {
				continue
			}
			n++
			key := page + ": " + c.text // a page's own expectation, else any page's
			want, ok := docExpect[key]
			if !ok {
				key = c.text
				want, ok = docExpect[key]
			}
			used[key] = used[key] || ok
			if c.shows && !ok {
				missing = append(missing, fmt.Sprintf("%s:%d: %s", page, c.line, c.text))
			}
			run := strings.ReplaceAll(c.text, "/tmp/", "$WORK/tmp/")
			code := want.code
			if want.follow {
				run, code = "timeout -s INT 2 "+run, 124
			}
			fmt.Fprintf(&sh, "{ %s\n} >\"$WORK/out/%d.out\" 2>\"$WORK/out/%d.err\" </dev/null; echo $? >\"$WORK/out/%d.rc\"\n", run, n, n, n)
			checks = append(checks, docCheck{N: n, Where: fmt.Sprintf("%s:%d", page, c.line), Cmd: c.text, Stdout: want.stdout, Stderr: want.stderr, Code: code})
		}
	}
	shown := map[string]bool{}
	for _, m := range docFile.FindAllStringSubmatch(string(src), -1) {
		shown[m[1]] = true
		fmt.Fprintf(&files, "-- proj/%s --\n%s", m[1], m[2])
	}
	for _, m := range docShellFile.FindAllStringSubmatch(string(src), -1) {
		shown[m[2]] = true
		fmt.Fprintf(&files, "-- proj/%s --\n%s%s", m[2], m[1], m[3])
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range cfg.files {
			if !yield(k) {
				return
			}
		}
	}) {
		if !shown[strings.TrimPrefix(name, "proj/")] {
			fmt.Fprintf(&files, "-- %s --\n%s\n", name, cfg.files[name])
		}
	}
	if cfg.config != "" {
		config := strings.ReplaceAll(cfg.config, "$EVERYTHING", testenv.NPMPackageBin(t, "@modelcontextprotocol/server-everything"))
		fmt.Fprintf(&files, "-- config/mcpx/config.json --\n%s\n", config)
	}
	fmt.Fprintf(&files, "-- proj/.keep --\n")
	manifest, _ := json.Marshal(checks)
	var ts strings.Builder
	ts.WriteString("exec sh -c 'exec mcpx serve 2> serve.log' &daemon&\nwaitsock $SOCK\n")
	ts.WriteString("exec sh $WORK/page.sh\n")
	ts.WriteString("docchecks checks.json\n")
	// The page may have stopped the daemon itself (the tour ends so);
	// daemon stop starts none.
	ts.WriteString("exec sh -c 'mcpx daemon stop >/dev/null 2>&1; true'\nwait daemon\n")
	fmt.Fprintf(&ts, "\n-- page.sh --\n%s-- checks.json --\n%s\n%s", sh.String(), manifest, files.String())
	return ts.String(), missing
}

var (
	docFile      = regexp.MustCompile("(?s)```(?:ts|js)\n// (\\S+)\n(.*?)```")
	docShellFile = regexp.MustCompile("(?s)```sh\n(#![^\n]*\n)# (\\S+)\n(.*?)```") // the shebang, then "# path"
)

// docSetup adds to a page's setup: $WORK/tmp (the pages' /tmp), and the
// daemons of a --config the page started (several daemons), stopped at
// the end as the default one is.
func docSetup(setup func(*testscript.Env) error) func(*testscript.Env) error {
	return func(e *testscript.Env) error {
		if err := setup(e); err != nil {
			return err
		}
		e.Defer(func() {
			dirs, _ := filepath.Glob(filepath.Join(e.WorkDir, "state", "mcpx", paths.DaemonsDir, "*"))
			for _, d := range dirs {
				stopRecordedDaemon(d)
			}
		})
		return nil
	}
}

// docChecks is the testscript command `docchecks checks.json`: every
// command of the page exited and printed as its check says; each that did
// not is reported with what it printed.
func docChecks(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: docchecks checks.json")
	}
	var checks []docCheck
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &checks))
	var failed []string
	for _, c := range checks {
		read := func(ext string) string {
			b, _ := os.ReadFile(ts.MkAbs(fmt.Sprintf("out/%d.%s", c.N, ext)))
			return string(b)
		}
		out, errOut, rc := read("out"), read("err"), strings.TrimSpace(read("rc"))
		var why []string
		if rc != fmt.Sprint(c.Code) {
			why = append(why, fmt.Sprintf("exit %s, want %d", rc, c.Code))
		}
		if c.Stdout != "" && !regexp.MustCompile(c.Stdout).MatchString(out) {
			why = append(why, fmt.Sprintf("stdout does not match %q", c.Stdout))
		}
		if c.Stderr != "" && !regexp.MustCompile(c.Stderr).MatchString(errOut) {
			why = append(why, fmt.Sprintf("stderr does not match %q", c.Stderr))
		}
		if len(why) > 0 {
			failed = append(failed, fmt.Sprintf("%s: %s\n  %s\n  stdout: %q\n  stderr: %q", c.Where, c.Cmd, strings.Join(why, "; "), clipDoc(out), clipDoc(errOut)))
		}
	}
	if len(failed) > 0 {
		ts.Fatalf("%d of %d commands did not do what the page says:\n%s", len(failed), len(checks), strings.Join(failed, "\n"))
	}
}

func clipDoc(s string) string {
	if len(s) > 1500 {
		return s[:1500] + "…"
	}
	return s
}

// TestReadmeReadNext: the README's "Read next" table names every page of
// docs/, and only pages that exist.
func TestReadmeReadNext(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "\n## Read next\n")
	if !ok {
		t.Fatal("README.md has no Read next section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\| \[docs/([^\]]+)\]\(docs/([^)]+)\) \|`).FindAllStringSubmatch(table, -1) {
		if m[1] != m[2] {
			t.Errorf("the row of %s links to %s", m[1], m[2])
		}
		listed[m[1]] = true
	}
	pages, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	for _, p := range pages {
		if name := filepath.Base(p); !listed[name] {
			t.Errorf("README.md's Read next table does not list docs/%s", name)
		}
		delete(listed, filepath.Base(p))
	}
	for name := range listed {
		t.Errorf("README.md's Read next table lists docs/%s, which does not exist", name)
	}
}

// TestArchitectureReference: docs/architecture.md's behaviour reference
// names every other page of docs/, and only pages that exist.
func TestArchitectureReference(t *testing.T) {
	arch, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(arch), "\n## Behaviour reference\n")
	if !ok {
		t.Fatal("docs/architecture.md has no Behaviour reference section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\| \[([^\]]+)\]\(([^)]+)\) \|`).FindAllStringSubmatch(table, -1) {
		if m[1] != m[2] {
			t.Errorf("the row of %s links to %s", m[1], m[2])
		}
		listed[m[1]] = true
	}
	pages, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	for _, p := range pages {
		name := filepath.Base(p)
		if name != "architecture.md" && !listed[name] {
			t.Errorf("docs/architecture.md's behaviour reference does not list %s", name)
		}
		delete(listed, name)
	}
	for name := range listed {
		t.Errorf("docs/architecture.md's behaviour reference lists %s, which does not exist", name)
	}
}
