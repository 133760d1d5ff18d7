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
	// ClientImports resolve to.
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
}

// Bundle writes the script bundled with the client and its lib/ imports
// into one ES module, and the runner that imports it, to opts.Dir. It
// returns the runner's path. An error names the file and line esbuild
// could not bundle.
func Bundle(opts BundleOptions) (string, error) {
	bo := api.BuildOptions{
		Outfile:  filepath.Join(opts.Dir, "script.mjs"),
		Bundle:   true,
		Write:    true,
		Format:   api.FormatESModule,
		Platform: api.PlatformNode,
		Target:   api.ESNext,
		LogLevel: api.LogLevelSilent,
		// An inline source map, with the sources' paths relative to the
		// bundle, so that a stack names the script's own file and line
		// (node with --enable-source-maps, deno unasked, the runner for bun).
		Sourcemap:      api.SourceMapInline,
		SourcesContent: api.SourcesContentExclude,
		Plugins:        []api.Plugin{resolver(opts)},
		// Packages a script imports from its own node_modules are
		// bundled too; node builtins stay imports (platform node).
	}
	if opts.Source != "" {
		bo.Stdin = &api.StdinOptions{Contents: opts.Source, ResolveDir: opts.SourceDir, Sourcefile: opts.Entry, Loader: api.LoaderTS}
	} else {
		bo.EntryPoints = []string{opts.Entry}
	}
	res := api.Build(bo)
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
	spec := struct {
		Export string          `json:"export,omitempty"`
		Args   json.RawMessage `json:"args,omitempty"`
	}{opts.Export, opts.Args}
	b, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(opts.Dir, "spec.json"), b, 0o600); err != nil {
		return "", err
	}
	runner := filepath.Join(opts.Dir, "runner.mjs")
	return runner, os.WriteFile(runner, []byte(runnerSource), 0o600)
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

// runnerSource is the runner: it installs the call hook, imports the
// bundled script (running its top-level code), and calls the function
// export the spec names, printing its return value as JSON. Plain
// JavaScript with node: imports, which Deno and Bun provide too. An error
// it prints has its stack's bundle frames mapped back to the script's
// files through the bundle's inline source map, for a runtime that does
// not apply it (bun; node and deno have mapped them already).
const runnerSource = `// mcpx run's runner (generated; see package mcpx.dev/mcpx/scripts).
import { appendFileSync, readFileSync } from "node:fs";
import process from "node:process";

const report = process.env.` + EnvReport + `;
globalThis[Symbol.for("mcpx.call")] = (call) => {
  if (report) appendFileSync(report, JSON.stringify(call) + "\n");
};
const spec = JSON.parse(readFileSync(new URL("./spec.json", import.meta.url), "utf8"));
const bundle = new URL("./script.mjs", import.meta.url);

// stackOf is e's stack with frames in the bundle mapped to the sources.
function stackOf(e) {
  const stack = e instanceof Error && e.stack ? e.stack : String(e);
  try {
    const m = /\/\/# sourceMappingURL=data:application\/json;base64,(\S+)\s*$/.exec(readFileSync(bundle, "utf8"));
    if (!m) return stack;
    const map = JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(m[1]), (c) => c.charCodeAt(0))));
    const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const lines = []; // per bundle line: [column, source, line, column] segments
    let src = 0, line = 0, col = 0;
    for (const l of map.mappings.split(";")) {
      const segs = [];
      let gen = 0;
      for (const seg of l.split(",")) {
        const v = [];
        let shift = 0, value = 0;
        for (const ch of seg) {
          const d = B64.indexOf(ch);
          value += (d & 31) << shift;
          if (d & 32) shift += 5;
          else {
            v.push(value & 1 ? -(value >>> 1) : value >>> 1);
            value = shift = 0;
          }
        }
        if (v.length === 0) continue;
        gen += v[0];
        if (v.length >= 4) {
          src += v[1], line += v[2], col += v[3];
          segs.push([gen, src, line, col]);
        }
      }
      lines.push(segs);
    }
    const path = decodeURIComponent(bundle.pathname).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    return stack.replace(new RegExp("(?:file://)?" + path + ":(\\d+):(\\d+)", "g"), (whole, l, c) => {
      let best;
      for (const s of lines[Number(l) - 1] ?? []) if (s[0] <= Number(c) - 1) best = s;
      if (!best) return whole;
      const file = decodeURIComponent(new URL((map.sourceRoot ?? "") + map.sources[best[1]], bundle).pathname);
      return file + ":" + (best[2] + 1) + ":" + (best[3] + 1);
    });
  } catch {
    return stack;
  }
}

let mod;
try {
  mod = await import("./script.mjs");
} catch (e) {
  console.error(stackOf(e));
  process.exit(1);
}
const name = spec.export ?? "default";
const fn = mod[name];
if (spec.export !== undefined && typeof fn !== "function") {
  console.error("mcpx run: the script exports no function " + JSON.stringify(name) +
    "; its exports: " + (Object.keys(mod).join(", ") || "none"));
  process.exit(1);
}
if (typeof fn === "function") {
  let out = "";
  try {
    const value = await fn("args" in spec ? spec.args : process.argv.slice(2));
    out = value === undefined ? "" : (JSON.stringify(value) ?? "") + "\n";
  } catch (e) {
    console.error(stackOf(e));
    process.exitCode = 1;
  }
  // The function's promise settling ends the run: an idle keep-alive
  // connection (Node's fetch keeps one for a while) must not hold it.
  process.stdout.write(out, () => process.exit());
}
`
