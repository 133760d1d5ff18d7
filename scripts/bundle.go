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
	// whose relative imports resolve in SourceDir.
	Source    string
	SourceDir string
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
	// Prefix and Suffix are the lines the launcher runs before the script
	// and in a finally after it (the merged script.prefix and
	// script.suffix).
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
	bo := esmBuild(opts, filepath.Join(opts.Dir, "script.mjs"))
	// An inline source map, with the sources' paths relative to the
	// bundle, so that a stack names the script's own file and line (node
	// with --enable-source-maps, deno unasked, the launcher for bun).
	bo.Sourcemap, bo.SourcesContent = api.SourceMapInline, api.SourcesContentExclude
	if opts.Source != "" {
		bo.Stdin = &api.StdinOptions{Contents: opts.Source, ResolveDir: opts.SourceDir, Sourcefile: opts.Entry, Loader: api.LoaderTS}
	} else {
		bo.EntryPoints = []string{opts.Entry}
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
		var msgs []string
		for _, m := range res.Errors {
			if l := m.Location; l != nil {
				msgs = append(msgs, fmt.Sprintf("%s:%d:%d: %s", l.File, l.Line, l.Column, m.Text))
			} else {
				msgs = append(msgs, m.Text)
			}
		}
		return "", fmt.Errorf("bundling %s: %s", opts.Entry, strings.Join(msgs, "; "))
	}
	if opts.Minimal {
		return filepath.Join(opts.Dir, "script.mjs"), nil
	}
	return launcher(opts)
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
