package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/adapter"
	"mcpx.dev/mcpx/adapter/cli"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// open makes the namespace of tools in dir, with PATH and the test's
// process marker in its environment.
func open(t *testing.T, dir string, tools map[string]cli.Tool) adapter.Namespace {
	t.Helper()
	op, err := cli.New(cli.Config{Server: "cli", Tools: tools, MaxOutput: 1 << 10})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ns, err := op.Open(t.Context(), adapter.Scope{Server: "cli", Root: dir, Cwd: dir, Env: []string{"PATH=/usr/bin:/bin", proctest.Env(t)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}

func callTool(t *testing.T, ns adapter.Namespace, name, args string) *adapter.Result {
	t.Helper()
	res, err := ns.CallTool(t.Context(), adapter.Call{Name: name, Arguments: json.RawMessage(args), Progress: func(float64, float64, string) {}})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func text(r *adapter.Result) string {
	if len(r.Content) == 0 {
		return ""
	}
	return r.Content[0].Text
}

// TestArguments: each argument is validated against the input schema and
// rendered as one whole argument, with no shell: numbers in plain decimal,
// booleans, arrays as one argument each, a value with shell syntax as it
// is; a failure names the argument and runs nothing.
func TestArguments(t *testing.T) {
	proctest.CheckNoLeaks(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	ns := open(t, dir, map[string]cli.Tool{
		"args": {Args: []string{"/bin/sh", "-c", `touch ran; for a in "$@"; do printf '[%s]' "$a"; done`, "sh", "--n", "{n}", "{flag}", "{words}", "{text}"},
			Input: json.RawMessage(`{"type":"object","properties":{"n":{"type":"number"},"flag":{"type":"boolean","default":false},"words":{"type":"array","items":{"type":"string"}},"text":{"type":"string","maxLength":20}},"required":["n","words","text"]}`)},
		"plain": {Args: []string{"/bin/echo", "{who}"}},
	})
	res := callTool(t, ns, "args", `{"n":1e6,"flag":true,"words":["a b","c"],"text":"$(id); rm -rf ~"}`)
	if res.IsError || text(res) != "[--n][1000000][true][a b][c][$(id); rm -rf ~]" {
		t.Errorf("args = %q (isError %v)", text(res), res.IsError)
	}
	res = callTool(t, ns, "args", `{"n":-0.5e-2,"words":[],"text":"x"}`)
	if text(res) != "[--n][-0.005][false][x]" {
		t.Errorf("args with a default and an empty array = %q", text(res))
	}
	os.Remove(marker)
	for _, c := range []struct{ args, want string }{
		{`{"n":"12","words":[],"text":"x"}`, "argument n: got string, want number"},
		{`{"n":1,"words":[],"text":"this is far too long for it"}`, "argument text: maxLength: got 27, want 20"},
		{`{"n":1,"words":["ok",{"a":1}],"text":"x"}`, "argument words.1"},
		{`{"n":1,"text":"x"}`, "missing property 'words'"},
		{`{"n":1,"words":["--upload-pack=evil"],"text":"x"}`, `argument words: "--upload-pack=evil" starts with "-"`},
	} {
		res := callTool(t, ns, "args", c.args)
		if !res.IsError || !strings.Contains(text(res), c.want) || !strings.Contains(text(res), "nothing was run") {
			t.Errorf("%s: %q (isError %v); want an error with %q", c.args, text(res), res.IsError, c.want)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a refused call ran the command")
	}
	if res := callTool(t, ns, "plain", `{"who":"ada"}`); text(res) != "ada\n" {
		t.Errorf("plain = %q", text(res))
	}
	if res := callTool(t, ns, "plain", `{"who":7}`); !res.IsError || !strings.Contains(text(res), "argument who: got number, want string") {
		t.Errorf("a number for the default schema's string: %q", text(res))
	}
	if _, err := ns.CallTool(t.Context(), adapter.Call{Name: "nope", Arguments: json.RawMessage(`{}`)}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown tool: %v", err)
	}
}

// TestConfigRefused: New refuses a placeholder that is not a whole
// argument, an undeclared placeholder, a bad output and a bad name, each
// naming the tool and field.
func TestConfigRefused(t *testing.T) {
	for _, c := range []struct {
		tool cli.Tool
		want string
	}{
		{cli.Tool{Args: []string{"gh", "pr", "list", "--limit={limit}"}}, `cli.tools.t.args[3]: "--limit={limit}" holds a placeholder inside an argument`},
		{cli.Tool{Args: []string{"ls", "{dir}"}, Input: json.RawMessage(`{"type":"object","properties":{"path":{}}}`)}, "cli.tools.t.args[1]: placeholder {dir} is not a property of input"},
		{cli.Tool{Args: []string{"{prog}"}}, "cli.tools.t.args[0]: the program may not be a placeholder"},
		{cli.Tool{Args: nil}, "cli.tools.t.args: empty"},
		{cli.Tool{Args: []string{"ls"}, Output: "yaml"}, `cli.tools.t.output: unknown output "yaml"`},
		{cli.Tool{Args: []string{"ls"}, Input: json.RawMessage(`{"type":"string"}`)}, "cli.tools.t.input: the input schema must be an object schema"},
		{cli.Tool{Args: []string{"ls"}, Input: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"http://x/y"}}}`)}, "cli.tools.t.input:"},
	} {
		_, err := cli.New(cli.Config{Server: "s", Tools: map[string]cli.Tool{"t": c.tool}})
		if err == nil || !strings.Contains(err.Error(), `server "s": `+c.want) {
			t.Errorf("%+v: %v; want %q", c.tool, err, c.want)
		}
	}
	if _, err := cli.New(cli.Config{Server: "s", Tools: map[string]cli.Tool{"a.b": {Args: []string{"ls"}}}}); err == nil || !strings.Contains(err.Error(), "not a tool name") {
		t.Errorf("a dotted name: %v", err)
	}
	a, _ := cli.New(cli.Config{Tools: map[string]cli.Tool{"t": {Args: []string{"ls"}}}})
	b, _ := cli.New(cli.Config{Tools: map[string]cli.Tool{"t": {Args: []string{"ls", "-l"}}}})
	if a.Identity() == b.Identity() || a.Kind() != "cli" {
		t.Errorf("identities %s and %s, kind %s", a.Identity(), b.Identity(), a.Kind())
	}
}

// TestResults: stdout as text, json objects as structuredContent (other
// values under "result"), a failure's exit status and stderr, output over
// the bound cut, the scope's cwd and PATH.
func TestResults(t *testing.T) {
	proctest.CheckNoLeaks(t)
	dir := t.TempDir()
	ns := open(t, dir, map[string]cli.Tool{
		"obj":  {Args: []string{"echo", `{"a": 1}`}, Output: "json"},
		"arr":  {Args: []string{"echo", `[1, 2]`}, Output: "json"},
		"bad":  {Args: []string{"echo", `not json`}, Output: "json"},
		"fail": {Args: []string{"/bin/sh", "-c", "echo partial; echo oops >&2; exit 3"}},
		"big":  {Args: []string{"head", "-c", "5000", "/dev/zero"}},
		"pwd":  {Args: []string{"pwd"}},
		"gone": {Args: []string{"no-such-program-mcpx"}},
	})
	if r := callTool(t, ns, "obj", `{}`); r.IsError || string(r.StructuredContent) != `{"a":1}` || text(r) != "{\"a\": 1}\n" {
		t.Errorf("obj = %+v", r)
	}
	if r := callTool(t, ns, "arr", `{}`); string(r.StructuredContent) != `{"result":[1,2]}` {
		t.Errorf("arr = %s", r.StructuredContent)
	}
	if r := callTool(t, ns, "bad", `{}`); !r.IsError || !strings.Contains(text(r), "stdout is not JSON") {
		t.Errorf("bad = %q", text(r))
	}
	if r := callTool(t, ns, "fail", `{}`); !r.IsError || !strings.Contains(text(r), "exit status 3") || !strings.Contains(text(r), "stderr:\noops") || !strings.Contains(text(r), "partial") {
		t.Errorf("fail = %q", text(r))
	}
	if r := callTool(t, ns, "big", `{}`); len(text(r)) > 1100 || !strings.Contains(text(r), "[output cut at 1024 bytes]") {
		t.Errorf("big: %d bytes", len(text(r)))
	}
	if r := callTool(t, ns, "pwd", `{}`); strings.TrimSpace(text(r)) != dir {
		t.Errorf("pwd = %q, want the scope's cwd %s", text(r), dir)
	}
	if r := callTool(t, ns, "gone", `{}`); !r.IsError || !strings.Contains(text(r), "/usr/bin:/bin") {
		t.Errorf("gone = %q; want the scope's PATH named", text(r))
	}
}

// TestCancelKillsTheTree: a cancelled call kills its process and what it
// started, a setsid'd grandchild included, and returns.
func TestCancelKillsTheTree(t *testing.T) {
	proctest.CheckNoLeaks(t)
	dir := t.TempDir()
	ns := open(t, dir, map[string]cli.Tool{
		"sleep": {Args: []string{"/bin/sh", "-c", "setsid sleep 1000 & echo started > started; sleep 1000"}},
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan *adapter.Result, 1)
	go func() {
		res, _ := ns.CallTool(ctx, adapter.Call{Name: "sleep", Arguments: json.RawMessage(`{}`)})
		done <- res
	}()
	testenv.WaitFor(t, "the command to start", func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	})
	cancel()
	select {
	case r := <-done:
		if !r.IsError || !strings.Contains(text(r), "processes were killed") {
			t.Errorf("cancelled call = %q", text(r))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
}
