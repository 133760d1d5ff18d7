package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/config/chain"
	"mcpx.dev/mcpx/nixresolve"
	"mcpx.dev/mcpx/nixresolve/nixspec"
	"mcpx.dev/mcpx/scripts"
)

// PlanOptions are what a run is planned from: the script, where it is
// called from, and the command line's choices.
type PlanOptions struct {
	// Script is the script file or name as given (scripts.Resolve on the
	// chain's scripts/ directories); not used with Snippet.
	Script string
	// Snippet, when not "", is what runs instead (`mcpx exec`'s).
	Snippet string
	// Cwd is the caller's directory, and Chain its config chain.
	Cwd   string
	Chain chain.Chain
	// Prefix, Suffix and Env are the command line's layer over the
	// chain's script settings (LoadSettings).
	Prefix, Suffix config.Lines
	Env            map[string]string
	// Export, Args and Minimal are the command line's, as Script's. With
	// Prefix and Suffix they are a JavaScript runtime's: a script that
	// runs on an interpreter, or Minimal, takes none of them.
	Export  string
	Args    json.RawMessage
	Minimal bool
	// Runtime is the runtime asked for (--runtime); "" = $MCPX_RUNTIME
	// (or its alias $MCPX_SCRIPT_RUNTIME), else the chain's
	// script.runtime, else ClientRuntime (the client config's), else the
	// first on PATH (scripts.PickRuntime). A nix: spec is built by nix
	// (package nixresolve, cached under State), bounded by Context.
	Runtime, ClientRuntime string
	// Context bounds a nix: runtime's build; nil = Background.
	Context context.Context
	// Getenv reads the caller's environment ($MCPX_RUNTIME, and the PATH
	// an execution environment's goes before); nil = os.Getenv.
	Getenv func(string) string
	// Note is told what the caller may want to know of the plan (that
	// $MCPX_RUNTIME won over a different $MCPX_SCRIPT_RUNTIME); nil =
	// nobody.
	Note func(msg string)
	// LookPath finds a runtime on PATH; nil = exec.LookPath.
	LookPath func(string) (string, error)
	// State is mcpx's state directory. Under it are the run cache (run/:
	// Script.Cache), the installed package sets (deps/) and the captured
	// execution environments (script-env/).
	State string
	// Log is told of each package set installed; nil = nobody.
	Log io.Writer
	// Warn is told of a config file on the chain that is not used
	// (LoadSettings); nil = nobody.
	Warn func(file string, err error)
}

// Plan is what a run will run, decided before the broker is reached: the
// script resolved on the config chain, whether it runs on an interpreter
// or a JavaScript runtime (and which), the lines around it, where its
// packages come from and its environment from the chain's settings.
//
//	p, err := runner.NewPlan(runner.PlanOptions{Script: "report", Cwd: cwd, Chain: ch, State: state})
//	if err != nil { ... } // the command line's mistake: the message says which
//	r, err := runner.Start(ctx, runner.Options{..., Relay: p.Relay(usesDefaultRecord)})
//	s := p.Script
//	dev, err := p.Environment(ctx, dir) // script.environment, captured by nix
//	s.Env = append(dev, s.Env...)
//	env, err := r.Script(ctx, s)
type Plan struct {
	// Script is the run's script as planned: Path (or Snippet),
	// Interpreter or Runtime, Prefix, Suffix, Minimal, Export, Args, Deps,
	// Env (the settings' variables) and Cache. The caller adds the rest:
	// Argv, Lib, the streams, Envelope.
	Script Script
	// Settings are the chain's script settings, merged.
	Settings Settings

	getenv func(string) string
	state  string
	// runtimeSpec is the nix: spec the runtime (or the interpreter) was
	// built from, made absolute; "" for one on the host. An isolated
	// environment holds its package.
	runtimeSpec string
}

// NewPlan plans a run. Its errors are the caller's to fix: a script that
// is not found, a config file that does not load, an interpreter or
// runtime that is not there, options a script on an interpreter does not
// take.
func NewPlan(o PlanOptions) (*Plan, error) {
	p := &Plan{getenv: o.Getenv, state: o.State}
	if p.getenv == nil {
		p.getenv = os.Getenv
	}
	lookPath := o.LookPath
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	s := Script{Path: scripts.ExecName, Snippet: o.Snippet, Export: o.Export, Args: o.Args, Minimal: o.Minimal, Cache: filepath.Join(o.State, "run")}
	var err error
	if o.Snippet == "" {
		if s.Path, err = scripts.Resolve(ChainDirs(o.Chain), o.Cwd, o.Script); err != nil {
			return nil, err
		}
	}
	if p.Settings, err = LoadSettings(o.Chain, o.Prefix, o.Suffix, o.Env, o.Warn); err != nil {
		return nil, err
	}
	if o.Snippet == "" {
		if s.Interpreter, err = scripts.Interpreter(s.Path, p.Settings.Interpreter); err != nil {
			return nil, err
		}
		if err = p.nixInterpreter(o, s.Interpreter, filepath.Ext(s.Path)); err != nil {
			return nil, err
		}
	}
	jsOnly := o.Export != "" || o.Args != nil || o.Prefix != nil || o.Suffix != nil
	switch {
	case s.Interpreter != nil && jsOnly:
		return nil, fmt.Errorf("%s runs on %s, not a JavaScript runtime: it takes no --export, --json-args, --prefix or --suffix (its arguments are the positional ones)",
			o.Script, strings.Join(s.Interpreter, " "))
	case o.Minimal && jsOnly:
		return nil, errors.New("--minimal runs the module alone: it takes no --export, --json-args, --prefix or --suffix")
	case s.Interpreter == nil && !o.Minimal:
		s.Prefix, s.Suffix = p.Settings.Prefix, p.Settings.Suffix
	}
	if s.Interpreter == nil {
		if s.Runtime, err = p.runtime(o, lookPath); err != nil {
			return nil, err
		}
		s.Deps = &scripts.Deps{From: p.Settings.Deps.From, Packages: p.Settings.Deps.Packages, Registry: p.Settings.Deps.Registry,
			Cache: filepath.Join(o.State, "deps"), Log: o.Log}
		for _, dir := range p.Settings.ConfigDirs {
			s.Deps.ConfigManifests = append(s.Deps.ConfigManifests, filepath.Join(dir, "package.json"))
		}
	}
	s.Env = environ(p.Settings.Env)
	p.Script = s
	return p, nil
}

// nixInterpreter replaces a nix: spec at the head of interp (the
// script.interpreter of ext) with the program nix builds for it, built
// once and cached in the state directory, as a nix: runtime is; a
// relative path ref is the directory's of the config file that set it.
func (p *Plan) nixInterpreter(o PlanOptions, interp []string, ext string) error {
	if len(interp) == 0 || !nixspec.Is(interp[0]) {
		return nil
	}
	dir, from := o.Cwd, fmt.Sprintf("script.interpreter[%q]", ext)
	if file := p.Settings.InterpreterFiles[ext]; file != "" {
		dir, from = filepath.Dir(file), from+" ("+file+")"
	}
	r, err := nixresolve.New(nixresolve.Options{CacheDir: filepath.Join(p.state, scriptEnvDir), Dir: dir})
	if err != nil {
		return err
	}
	defer r.Close()
	ctx := o.Context
	if ctx == nil {
		ctx = context.Background()
	}
	prog, err := r.Resolve(ctx, interp[0])
	if err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	interp[0], p.runtimeSpec = prog.Path, prog.Spec
	return nil
}

// runtime picks the JavaScript runtime (PlanOptions.Runtime says how).
func (p *Plan) runtime(o PlanOptions, lookPath func(string) (string, error)) (scripts.Runtime, error) {
	env, envFrom, other := scripts.RuntimeFromEnv(p.getenv)
	if other != "" && o.Note != nil && o.Runtime == "" {
		o.Note(fmt.Sprintf("$%s %q wins over $%s %q", scripts.EnvRuntime, env, scripts.EnvScriptRuntime, other))
	}
	dirs := map[string]string{"script.runtime": o.Cwd}
	from := "script.runtime"
	if p.Settings.RuntimeFile != "" {
		from = "script.runtime (" + p.Settings.RuntimeFile + ")"
		dirs[from] = filepath.Dir(p.Settings.RuntimeFile)
	}
	choices := []scripts.RuntimeChoice{{Value: o.Runtime, From: "--runtime"}, {Value: env, From: envFrom},
		{Value: p.Settings.Runtime, From: from}, {Value: o.ClientRuntime, From: `the client config's "runtime"`}}
	nix := func(c scripts.RuntimeChoice) (string, error) {
		dir := o.Cwd
		if d, ok := dirs[c.From]; ok {
			dir = d
		}
		r, err := nixresolve.New(nixresolve.Options{CacheDir: filepath.Join(p.state, scriptEnvDir), Dir: dir})
		if err != nil {
			return "", err
		}
		defer r.Close()
		ctx := o.Context
		if ctx == nil {
			ctx = context.Background()
		}
		prog, err := r.Resolve(ctx, c.Value)
		p.runtimeSpec = prog.Spec
		return prog.Path, err
	}
	return scripts.PickRuntime(choices, lookPath, nix)
}

// Relay reports whether the run needs its relay (Options.Relay) for a
// local broker: a script on an interpreter speaks HTTP itself and needs
// $MCPX_URL and $MCPX_TOKEN, and a generated client that cannot find the
// broker by the default daemon record (defaultRecord false: the daemon of
// a --config, an in-process one) reaches it through the relay. A remote
// broker's run has its relay anyway.
func (p *Plan) Relay(defaultRecord bool) bool {
	return p.Script.Interpreter != nil || !defaultRecord
}

// scriptEnvDir is where the execution environments scripts run in are
// captured and cached, apart from the daemon's (<state>/nix), whose
// garbage collection keeps only what its servers use.
const scriptEnvDir = "script-env"

// Environment returns the variables of the script's execution environment
// (script.environment) for a run in dir, as KEY=value, to come after the
// caller's: none for the host; the variables of a flake's devShell or a
// shell.nix, captured once and cached as a server's are (package
// nixresolve), with the shell's PATH before the caller's. "auto" is dir's
// flake.nix, else its shell.nix, else the host. A relative shell: file is
// the config file's directory's. "isolated" is a PATH of the bin of a
// nix: runtime's package and script.dependencies, built once: the
// caller's PATH is not in it.
func (p *Plan) Environment(ctx context.Context, dir string) ([]string, error) {
	env, from := p.Settings.Environment, p.Settings.EnvironmentDir
	if p.Settings.Dependencies != nil && env != config.EnvironmentIsolated {
		return nil, fmt.Errorf("script.dependencies (%s) are the packages of an isolated environment, and script.environment is %q; set it to \"isolated\", or remove dependencies",
			p.Settings.DependenciesFile, cmp.Or(env, "host"))
	}
	if env == config.EnvironmentIsolated {
		var pkgs []string
		if p.runtimeSpec != "" {
			pkgs = append(pkgs, p.runtimeSpec)
		}
		env = nixspec.Isolated(append(pkgs, p.Settings.Dependencies...))
	}
	if env == "auto" {
		env, from = "host", dir
		if fileExists(filepath.Join(dir, "flake.nix")) {
			env = "flake:path:" + dir
		} else if fileExists(filepath.Join(dir, "shell.nix")) {
			env = "shell:" + filepath.Join(dir, "shell.nix")
		}
	}
	if env == "" || env == "host" {
		return nil, nil
	}
	r, err := nixresolve.New(nixresolve.Options{CacheDir: filepath.Join(p.state, scriptEnvDir), Dir: from})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	d, err := r.Environment(ctx, env)
	if err != nil {
		return nil, fmt.Errorf("script.environment: %w", err)
	}
	vars := d.EnvVars()
	for i, kv := range vars {
		if path, ok := strings.CutPrefix(kv, "PATH="); ok && p.getenv("PATH") != "" && !strings.HasPrefix(env, nixspec.EnvIsolated) {
			vars[i] = "PATH=" + path + string(os.PathListSeparator) + p.getenv("PATH")
		}
	}
	return vars, nil
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}
