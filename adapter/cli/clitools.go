// Package cli turns command lines into tools: a server's "cli" block,
// each tool an argv run with no shell (an adapter.Opener).
//
//	op, err := clitools.New(clitools.Config{Server: "git", Tools: map[string]clitools.Tool{
//		"log": {Args: []string{"git", "log", "--oneline", "-n", "{count}"},
//			Input: json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}`)},
//	}})
//
// # Arguments
//
// An argument that is exactly "{name}" is a placeholder for the call's
// argument of that name; a placeholder anywhere else in an argument is a
// configuration error (New refuses it), and other braces are literal. The
// call's arguments are validated against the tool's input schema before
// anything runs (a failure is an isError result naming the argument), then
// rendered: a string as it is, a number in plain decimal (1e6 is
// "1000000"), a boolean as true or false, an array as one argument per
// element (each a string, number or boolean), so {"files": ["a", "b"]}
// makes "{files}" two arguments; null and objects are refused. A string
// that starts with "-" would be read as an option by most programs: it is
// refused unless an earlier argument is "--" or the argument's schema
// restricts it (pattern, enum or const). An argument the call leaves out
// takes its schema's default, else the call is refused. Without an input
// schema, every placeholder is a required string.
//
// # Running
//
// The program is looked up on the PATH of the scope's environment (not
// the daemon's), and runs in the scope's Cwd with the scope's Env and
// stdin from /dev/null, in a process group of its own. The call's ctx (the
// broker's callTimeout, the caller's cancellation, the instance's stop)
// kills the whole process tree. Stdout is the result: text, or with output
// "json" parsed into structuredContent (an object as it is, any other
// value as {"result": value}). A non-zero exit is an isError result with
// the exit status and the end of stderr. Stdout is kept up to
// Config.MaxOutput, stderr's last StderrTail bytes.
package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"mcpx.dev/mcpx/adapter"
	"mcpx.dev/mcpx/adapter/cli/argv"
)

// Tool is one command line as a tool.
type Tool struct {
	Description string
	Args        []string        // the argv; Args[0] the program
	Input       json.RawMessage // the arguments' JSON Schema; nil = the placeholders, each a required string
	Output      string          // "text" (or "") or "json"
}

// Config is a cli server.
type Config struct {
	Server string          // the server's name, for errors
	Tools  map[string]Tool // by tool name
	// MaxOutput bounds the stdout kept of one call; 0 = DefaultMaxOutput.
	// Over it, a text result is cut (and says so), a json one fails.
	MaxOutput int
	// Run starts cmd and waits for it, as (*exec.Cmd).Run, which it is
	// when nil. The daemon passes proc.RunTracked, so that its orphan
	// reaper leaves the exit status to the call.
	Run func(*exec.Cmd) error
	// Resolve maps a tool's program written as a nix: spec (args[0]
	// beginning "nix:") to the file to exec, at each call (the daemon's
	// resolver builds it once and caches it). nil = such a tool fails
	// saying so.
	Resolve func(ctx context.Context, spec string) (string, error)
}

// DefaultMaxOutput is the stdout kept of one call when Config.MaxOutput is 0.
const DefaultMaxOutput = 4 << 20

// StderrTail is how much of the end of stderr an error result carries.
const StderrTail = 16 << 10

// opener is a checked Config.
type opener struct {
	cfg      Config
	tools    map[string]*tool
	identity string
}

// tool is one checked Tool.
type tool struct {
	name   string
	spec   Tool
	schema *jsonschema.Schema
	input  json.RawMessage            // as listed
	props  map[string]json.RawMessage // input's properties
}

// New checks cfg and returns its Opener. Its errors name the tool and the
// field (tools.NAME.args[i], tools.NAME.input, tools.NAME.output).
func New(cfg Config) (adapter.Opener, error) {
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = DefaultMaxOutput
	}
	if len(cfg.Tools) == 0 {
		return nil, fmt.Errorf("server %q: cli.tools: no tools; add one, such as {\"log\": {\"args\": [\"git\", \"log\", \"--oneline\"]}}", cfg.Server)
	}
	o := &opener{cfg: cfg, tools: map[string]*tool{}}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(cfg.Tools)) {
		t, err := newTool(name, cfg.Tools[name])
		if err != nil {
			errs = append(errs, fmt.Errorf("server %q: cli.tools.%s.%w", cfg.Server, name, err))
			continue
		}
		o.tools[name] = t
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	b, _ := json.Marshal(struct {
		Tools     map[string]Tool
		MaxOutput int
	}{cfg.Tools, cfg.MaxOutput}) // map keys sorted: stable
	sum := sha256.Sum256(b)
	o.identity = hex.EncodeToString(sum[:16])
	return o, nil
}

func newTool(name string, spec Tool) (*tool, error) {
	if !argv.ToolName().MatchString(name) {
		return nil, fmt.Errorf("name: %q is not a tool name; use 1 to 64 letters, digits, _ and -", name)
	}
	switch spec.Output {
	case "", "text", "json":
	default:
		return nil, fmt.Errorf("output: unknown output %q; use \"text\" or \"json\"", spec.Output)
	}
	if errs := argv.Check(spec.Args, spec.Input); len(errs) > 0 {
		return nil, errs[0]
	}
	if err := argv.CheckInput(spec.Input); err != nil {
		return nil, fmt.Errorf("input: %v", err)
	}
	t := &tool{name: name, spec: spec, input: spec.Input}
	if _, ok := argv.Properties(spec.Input); !ok {
		t.input = defaultInput(spec.Args)
	}
	t.props, _ = argv.Properties(t.input)
	s, err := compileInput(name, t.input)
	if err != nil {
		return nil, fmt.Errorf("input: %v", err)
	}
	t.schema = s
	return t, nil
}

// defaultInput is the schema of a tool with none: its placeholders, each a
// required string, and nothing else.
func defaultInput(args []string) json.RawMessage {
	props := map[string]any{}
	required := []string{}
	for _, a := range args[1:] {
		if name, ok := argv.Placeholder(a); ok && props[name] == nil {
			props[name] = map[string]string{"type": "string"}
			required = append(required, name)
		}
	}
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false})
	return b
}

// compileInput compiles an input schema (draft 2020-12 unless it says
// otherwise), loading no reference from outside it.
func compileInput(name string, input json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(input))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	u := "mcpx:cli-input/" + name
	if err := c.AddResource(u, doc); err != nil {
		return nil, errors.New(strings.Join(strings.Fields(err.Error()), " "))
	}
	s, err := c.Compile(u)
	if err != nil {
		return nil, errors.New(strings.Join(strings.Fields(err.Error()), " "))
	}
	return s, nil
}

// noLoader refuses every URL a schema refers to.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema references outside the schema are not loaded: %s", url)
}

func (o *opener) Identity() string { return o.identity }
func (o *opener) Kind() string     { return "cli" }

// Open returns the namespace of one instance: the tools, run in scope.
func (o *opener) Open(_ context.Context, scope adapter.Scope) (adapter.Namespace, error) {
	return &namespace{o: o, scope: scope}, nil
}

type namespace struct {
	o     *opener
	scope adapter.Scope
}

func (n *namespace) ListTools(context.Context) ([]adapter.Tool, error) {
	out := make([]adapter.Tool, 0, len(n.o.tools))
	for _, name := range slices.Sorted(maps.Keys(n.o.tools)) {
		t := n.o.tools[name]
		out = append(out, adapter.Tool{Name: name, Description: t.spec.Description, InputSchema: t.input})
	}
	return out, nil
}

// Close has nothing to release: every call has stopped what it started.
func (n *namespace) Close() error { return nil }

func (n *namespace) CallTool(ctx context.Context, c adapter.Call) (*adapter.Result, error) {
	t := n.o.tools[c.Name]
	if t == nil {
		return nil, fmt.Errorf("unknown tool %q of server %q", c.Name, n.o.cfg.Server)
	}
	line, err := t.commandLine(c.Arguments)
	if err != nil {
		return adapter.TextResult(fmt.Sprintf("%s: %v; nothing was run", c.Name, err), true), nil
	}
	return n.run(ctx, t, line), nil
}
