package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"mcpx.dev/mcpx/adapter"
	"mcpx.dev/mcpx/adapter/cli/argv"
	"mcpx.dev/mcpx/internal/proctree"
)

// commandLine validates a call's arguments against the tool's input schema and
// renders its argv; an error names the argument and runs nothing.
func (t *tool) commandLine(arguments json.RawMessage) ([]string, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(arguments))
	if err != nil {
		return nil, fmt.Errorf("arguments are not JSON: %v", err)
	}
	args, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("arguments must be a JSON object")
	}
	if err := t.schema.Validate(v); err != nil {
		return nil, schemaFailure(err)
	}
	out := []string{t.spec.Args[0]}
	afterDashes := false
	for _, a := range t.spec.Args[1:] {
		name, ok := argv.Placeholder(a)
		if !ok {
			out = append(out, a)
			afterDashes = afterDashes || a == "--"
			continue
		}
		val, present := args[name]
		if !present {
			if val, present = t.defaultOf(name); !present {
				return nil, fmt.Errorf("argument %s is missing; the command line needs it", name)
			}
		}
		vals, err := render(name, val)
		if err != nil {
			return nil, err
		}
		for _, s := range vals {
			if strings.HasPrefix(s, "-") && !afterDashes && !isNumber(val) && !t.restricted(name) {
				return nil, fmt.Errorf("argument %s: %q starts with \"-\", which the program would read as an option; pass a value that does not, or (the server's owner) put \"--\" before it in args or restrict it with a pattern or enum in the input schema", name, s)
			}
		}
		out = append(out, vals...)
	}
	return out, nil
}

// schemaFailure names the first failing argument of a validation error.
func schemaFailure(err error) error {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	text := ve.Error() // "at '/limit': got string, want integer"
	if _, after, ok := strings.Cut(text, "': "); ok {
		text = after
	}
	if len(ve.InstanceLocation) == 0 {
		return fmt.Errorf("arguments: %s", text)
	}
	return fmt.Errorf("argument %s: %s", strings.Join(ve.InstanceLocation, "."), text)
}

// defaultOf is the default the input schema gives property name.
func (t *tool) defaultOf(name string) (any, bool) {
	var p struct {
		Default json.RawMessage `json:"default"`
	}
	if json.Unmarshal(t.props[name], &p) != nil || p.Default == nil {
		return nil, false
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(p.Default))
	return v, err == nil
}

// restricted reports whether the input schema restricts property name's
// strings to what its owner chose: a pattern, an enum or a const.
func (t *tool) restricted(name string) bool {
	var p map[string]json.RawMessage
	if json.Unmarshal(t.props[name], &p) != nil {
		return false
	}
	if items, ok := p["items"]; ok && json.Unmarshal(items, &p) != nil {
		return false
	}
	return p["pattern"] != nil || p["enum"] != nil || p["const"] != nil
}

// render turns one argument's value into command-line arguments.
func render(name string, v any) ([]string, error) {
	if list, ok := v.([]any); ok {
		out := make([]string, 0, len(list))
		for i, e := range list {
			s, err := scalar(e)
			if err != nil {
				return nil, fmt.Errorf("argument %s[%d]: %v", name, i, err)
			}
			out = append(out, s)
		}
		return out, nil
	}
	s, err := scalar(v)
	if err != nil {
		return nil, fmt.Errorf("argument %s: %v", name, err)
	}
	return []string{s}, nil
}

func scalar(v any) (string, error) {
	switch v := v.(type) {
	case string:
		if strings.IndexByte(v, 0) >= 0 {
			return "", errors.New("holds a NUL byte, which no command-line argument can")
		}
		return v, nil
	case bool:
		if v {
			return "true", nil
		}
		return "false", nil
	case json.Number:
		return plainDecimal(v)
	case nil:
		return "", errors.New("is null; a command-line argument is a string, number or boolean")
	}
	return "", errors.New("is an object; a command-line argument is a string, number or boolean (or an array of them)")
}

// plainDecimal writes a JSON number with no exponent: 1e6 is "1000000",
// 1.5e-3 "0.0015"; a number written so already is kept as written.
func plainDecimal(n json.Number) (string, error) {
	s := n.String()
	if !strings.ContainsAny(s, "eE") {
		return s, nil
	}
	f, _, err := big.ParseFloat(s, 10, 256, big.ToNearestEven)
	if err != nil {
		return "", fmt.Errorf("number %s: %v", s, err)
	}
	if f.IsInt() {
		i, _ := f.Int(nil)
		return i.String(), nil
	}
	return f.Text('f', -1), nil
}

func isNumber(v any) bool { _, ok := v.(json.Number); return ok }

// waitDelay bounds the wait for the pipes once the process is gone: a
// descendant that escaped the kill and holds them must not hold the call.
const waitDelay = 2 * time.Second

// run runs argv in the scope and makes the result.
func (n *namespace) run(ctx context.Context, t *tool, argv []string) *adapter.Result {
	path, err := n.program(ctx, argv[0])
	if err != nil {
		return adapter.TextResult(fmt.Sprintf("%s: %v", t.name, err), true)
	}
	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Dir, cmd.Env = n.scope.Cwd, n.scope.Env
	if cmd.Env == nil {
		cmd.Env = []string{} // never the daemon's whole environment
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		proctree.KillTree(cmd.Process.Pid)
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // Setpgid: the leader's pid is the group's
	}
	cmd.WaitDelay = waitDelay
	stdout := &headBuffer{max: n.o.cfg.MaxOutput}
	stderr := &tailBuffer{max: StderrTail}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	runf := n.o.cfg.Run
	if runf == nil {
		runf = (*exec.Cmd).Run
	}
	var limit string
	if n.scope.Run != nil {
		limit, err = n.scope.Run(ctx, cmd) // confined
	} else {
		err = runf(cmd)
	}
	switch {
	case ctx.Err() != nil:
		return adapter.TextResult(fmt.Sprintf("%s: the call ended (%v) and its processes were killed", t.name, context.Cause(ctx)), true)
	case err != nil && limit != "":
		return failed(t.name+" ("+limit+")", err, stdout, stderr)
	case err != nil:
		return failed(t.name, err, stdout, stderr)
	}
	return result(t, stdout)
}

// failed is the isError result of a run that did not exit 0.
func failed(name string, err error, stdout *headBuffer, stderr *tailBuffer) *adapter.Result {
	var b strings.Builder
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		fmt.Fprintf(&b, "%s: %s", name, ee.ProcessState.String()) // "exit status 2", "signal: killed"
	} else {
		fmt.Fprintf(&b, "%s: %v", name, err)
	}
	if s := stderr.String(); s != "" {
		b.WriteString("\nstderr:\n" + s)
	}
	if s := stdout.String(); s != "" {
		b.WriteString("\nstdout:\n" + s)
	}
	return adapter.TextResult(b.String(), true)
}

// result is the result of a run that exited 0: stdout as text, or parsed.
func result(t *tool, stdout *headBuffer) *adapter.Result {
	text := stdout.String()
	if t.spec.Output != "json" {
		if stdout.cut {
			text += fmt.Sprintf("\n[output cut at %d bytes]", stdout.max)
		}
		return adapter.TextResult(text, false)
	}
	if stdout.cut {
		return adapter.TextResult(fmt.Sprintf("%s: stdout is over %d bytes; the JSON cannot be read whole", t.name, stdout.max), true)
	}
	raw := bytes.TrimSpace(stdout.buf)
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return adapter.TextResult(fmt.Sprintf("%s: output is \"json\", but stdout is not JSON (%v):\n%s", t.name, err, clipText(text, 2048)), true)
	}
	var compact bytes.Buffer
	json.Compact(&compact, raw) //nolint:errcheck // valid: just parsed
	sc := compact.Bytes()
	if _, isObject := v.(map[string]any); !isObject {
		sc = append(append([]byte(`{"result":`), sc...), '}')
	}
	return &adapter.Result{Content: []adapter.Content{{Type: "text", Text: text}}, StructuredContent: sc}
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// lookPath finds the program as a shell of the scope would: a name with a
// slash as it is (relative to the scope's Cwd), another on the PATH of the
// scope's environment.
// program is the file a tool's program prog names: a nix: spec's
// (Config.Resolve), else prog found on the scope's PATH (lookPath).
func (n *namespace) program(ctx context.Context, prog string) (string, error) {
	if !strings.HasPrefix(prog, "nix:") {
		return lookPath(prog, n.scope)
	}
	if n.o.cfg.Resolve == nil {
		return "", fmt.Errorf("program %s: this daemon has no nix resolver, so nix: programs cannot run; name a program on PATH", prog)
	}
	return n.o.cfg.Resolve(ctx, prog)
}

func lookPath(prog string, scope adapter.Scope) (string, error) {
	if strings.Contains(prog, "/") {
		return prog, nil
	}
	path := ""
	for _, kv := range scope.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v // the last one wins, as exec keeps it
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, prog)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("program %q is not on the PATH the server's commands get (%s); install it, or name it by its absolute path in args[0]", prog, path)
}

// headBuffer keeps the first max bytes written to it and drops the rest.
type headBuffer struct {
	max int
	buf []byte
	cut bool
}

func (h *headBuffer) Write(p []byte) (int, error) {
	room := h.max - len(h.buf)
	if len(p) > room {
		h.buf = append(h.buf, p[:max(room, 0)]...)
		h.cut = true
		return len(p), nil
	}
	h.buf = append(h.buf, p...)
	return len(p), nil
}

func (h *headBuffer) String() string { return string(h.buf) }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.buf) }
