package scripts

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// EnvReport names the variable holding the file the runner appends one
// JSON line per tool call to (a Call).
const EnvReport = "MCPX_RUN_REPORT"

// ClientImports are the import specifiers that name the generated client.
var ClientImports = []string{"mcpx", "@mcpx/client"}

// BundleOptions say what to bundle.
type BundleOptions struct {
	// Entry is the script file; with Source, the name the module is
	// known by in messages and the source map.
	Entry string
	// Source, when not "", is the module's TypeScript source itself,
	// whose relative imports resolve in SourceDir; its first Preamble
	// lines are mcpx's own (ExecModule's), so that Source's line
	// Preamble+N is the script's line N in errors and stacks.
	Source    string
	SourceDir string
	Preamble  int
	// Client is the generated client module (a .ts file) that
	// ClientImports resolve to. The launcher imports its log (every console
	// member but log writes through it).
	Client string
	// Lib are the lib/ directories "@lib/<path>" is looked up in, nearest
	// first (LibDirs).
	Lib []string
	// Dir is where the bundle, the runner and its spec are written: a
	// directory of the run's own, removed by the caller after the run.
	Dir string
	// Export is the exported function to call; "" = the default export,
	// when it is a function.
	Export string
	// Args, when not nil, is the JSON value the function is called with
	// (--json-args); nil = the positional arguments as strings.
	Args json.RawMessage
	// Name is the script's name, as the prefix lines see it (script.name);
	// "" = Entry's base name without its extension.
	Name string
	// Prefix and Suffix are the lines run before the script, in its
	// module, and in the launcher's finally after it, in a function of the
	// module (the merged script.prefix and script.suffix; see entry).
	Prefix, Suffix []string
	// Minimal: no launcher; Bundle returns the bundle itself, which the
	// runtime runs alone (no call hook, function call, prefix or suffix).
	Minimal bool
	// Deps, when not nil, resolve npm: and jsr: specifiers and declared
	// packages (see Deps); nil = node_modules on disk only.
	Deps *Deps
}

// Bundle writes the script bundled with the client and its lib/ imports
// into one ES module, and the runner that imports it, to opts.Dir. It
// returns the runner's path. An error names the file and line esbuild
// could not bundle.
func Bundle(opts BundleOptions) (string, error) {
	out := filepath.Join(opts.Dir, "script.mjs")
	bo := esmBuild(opts, out)
	// An inline source map, with the sources' paths relative to the
	// bundle, so that a stack names the script's own file and line (node
	// with --enable-source-maps, deno unasked, the launcher for bun).
	bo.Sourcemap, bo.SourcesContent = api.SourceMapInline, api.SourcesContentExclude
	// The entry's name in the source map: its path relative to the bundle
	// (stdin's is its Sourcefile in SourceDir).
	body, entrySource := opts.Source, ""
	if opts.Source != "" {
		abs, err := filepath.Abs(filepath.Join(opts.SourceDir, opts.Entry))
		if err != nil {
			return "", err
		}
		rel, err := filepath.Rel(opts.Dir, abs)
		if err != nil {
			return "", err
		}
		entrySource = filepath.ToSlash(rel)
	} else {
		abs, err := filepath.Abs(opts.Entry)
		if err != nil {
			return "", err
		}
		if body, err = readEntry(abs); err != nil {
			return "", fmt.Errorf("bundling %s: %w", opts.Entry, err)
		}
		if entrySource, err = filepath.Rel(opts.Dir, abs); err != nil {
			return "", err
		}
		entrySource = filepath.ToSlash(entrySource)
		opts.Entry = abs
	}
	e := newEntry(opts, body, opts.Preamble)
	if opts.Source != "" {
		bo.Stdin = &api.StdinOptions{Contents: e.text, ResolveDir: opts.SourceDir, Sourcefile: opts.Entry, Loader: api.LoaderTS}
	} else {
		bo.EntryPoints = []string{opts.Entry}
		bo.Plugins = append(bo.Plugins, entryPlugin(opts.Entry, e))
	}
	var res api.BuildResult
	if opts.Deps != nil {
		var err error
		if res, err = bundleDeps(opts, bo); err != nil {
			return "", fmt.Errorf("bundling %s: %w", opts.Entry, err)
		}
	} else {
		res = api.Build(bo)
	}
	if len(res.Errors) > 0 {
		return "", buildError(opts, e, res.Errors)
	}
	if err := remapEntry(out, entrySource, e); err != nil {
		return "", fmt.Errorf("bundling %s: mapping its lines: %w", opts.Entry, err)
	}
	if opts.Minimal {
		return out, nil
	}
	return launcher(opts)
}

// buildError says what esbuild could not bundle: a prefix or suffix line,
// quoted, or a file and line (the script's own for the entry).
func buildError(opts BundleOptions, e entry, errs []api.Message) error {
	var msgs, lines []string
	for _, m := range errs {
		l := m.Location
		if l == nil {
			msgs = append(msgs, m.Text)
			continue
		}
		file, line := l.File, l.Line
		if abs, err := filepath.Abs(file); file == opts.Entry || err == nil && abs == opts.Entry {
			o := e.origin(line)
			for n := line - 1; o.line == 0 && n > 0; n-- { // mcpx's own line: the script's line before it
				if p := e.origin(n); p.source == "" {
					o = p
				}
			}
			if o.source != "" || o.line == 0 {
				lines = append(lines, fmt.Sprintf("%s in %q", m.Text, strings.TrimSpace(l.LineText)))
				continue
			}
			line = o.line
		}
		msgs = append(msgs, fmt.Sprintf("%s:%d:%d: %s", file, line, l.Column, m.Text))
	}
	if len(lines) > 0 {
		return fmt.Errorf("the prefix and suffix lines (script.prefix and script.suffix of the config chain, --prefix, --suffix) do not compile: %s",
			strings.Join(lines, "; "))
	}
	return fmt.Errorf("bundling %s: %s", opts.Entry, strings.Join(msgs, "; "))
}

// esmBuild are the options of a build of one ES module to out, with the
// client's import names and "@lib/" resolved. Packages a script imports
// from its own node_modules are bundled too; node builtins stay imports
// (platform node).
func esmBuild(opts BundleOptions, out string) api.BuildOptions {
	return api.BuildOptions{
		Outfile:  out,
		Bundle:   true,
		Write:    true,
		Format:   api.FormatESModule,
		Platform: api.PlatformNode,
		Target:   api.ESNext,
		LogLevel: api.LogLevelSilent,
		Plugins:  []api.Plugin{resolver(opts)},
	}
}

// resolver resolves the client's import names and "@lib/" paths.
func resolver(opts BundleOptions) api.Plugin {
	return api.Plugin{Name: "mcpx", Setup: func(b api.PluginBuild) {
		b.OnResolve(api.OnResolveOptions{Filter: `^(mcpx|@mcpx/client)$`}, func(api.OnResolveArgs) (api.OnResolveResult, error) {
			return api.OnResolveResult{Path: opts.Client}, nil
		})
		b.OnResolve(api.OnResolveOptions{Filter: `^@lib/`}, func(a api.OnResolveArgs) (api.OnResolveResult, error) {
			rel := strings.TrimPrefix(a.Path, "@lib/")
			if p, ok := libFile(opts.Lib, rel); ok {
				return api.OnResolveResult{Path: p}, nil
			}
			if len(opts.Lib) == 0 {
				return api.OnResolveResult{}, errors.New("no lib/ directory on the config chain (beside a scripts/ directory)")
			}
			return api.OnResolveResult{}, fmt.Errorf("no %s in %s", rel, strings.Join(opts.Lib, ", "))
		})
	}}
}

// libFile finds rel in the first lib directory holding it, as itself, with
// a script extension, or as a directory's index.
func libFile(libs []string, rel string) (string, bool) {
	clean := filepath.Clean("/" + rel)[1:] // never above the lib directory
	for _, lib := range libs {
		base := filepath.Join(lib, clean)
		cands := []string{base}
		for _, ext := range Extensions {
			cands = append(cands, base+ext)
		}
		for _, ext := range Extensions {
			cands = append(cands, filepath.Join(base, "index"+ext))
		}
		for _, c := range cands {
			if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
				return c, true
			}
		}
	}
	return "", false
}
