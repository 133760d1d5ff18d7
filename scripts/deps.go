package scripts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/evanw/esbuild/pkg/api"
)

// Deps say where the packages a script imports come from, and where they
// are installed (the "script.deps" settings of the config chain, merged).
// A script's packages — its npm: specifiers and the bare imports a
// declaring source names — are one dependency set, installed once into a
// directory of Cache named by the set and reused by every run that needs
// the same set (see install).
type Deps struct {
	// From are the sources packages may come from (config.DepSources:
	// specifiers, packages, manifest, config, host); nil = all.
	From []string
	// Packages are script.deps.packages: name → version range.
	Packages map[string]string
	// ConfigManifests are the package.json files beside the config files
	// of the chain, nearest first (source "config"); missing ones are
	// skipped.
	ConfigManifests []string
	// Registry is the npm registry; "" = npm's own setting.
	Registry string
	// Cache is the directory the sets are installed in (<state>/deps).
	Cache string
	// Runtime is the runtime's name: jsr: specifiers are left to deno,
	// which fetches them itself, and refused on the others.
	Runtime string
	// NPM is the npm binary; "" = npm on PATH.
	NPM string
	// Log is told, in one line, of each install; nil = nobody.
	Log io.Writer
	// MaxSets and MaxBytes bound the cache; 0 = MaxDepSets, MaxDepBytes.
	MaxSets  int
	MaxBytes int64
	// Context bounds an install (with InstallTimeout); nil = Background.
	Context context.Context
}

func (d *Deps) allows(source string) bool { return d.From == nil || slices.Contains(d.From, source) }

// dep is one package of a set: its name and version range.
type dep struct{ name, rng string }

// declared are the bare import names the declaring sources name (packages,
// the nearest manifest above dir, the config chain's package.json files),
// the earlier source winning for a name. An import name is the package's
// own, or a deno.json import map key ({"odd": "npm:is-odd@3"}).
func (d *Deps) declared(dir string) (map[string]dep, error) {
	out := map[string]dep{}
	add := func(m map[string]dep) {
		for k, v := range m {
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
	}
	if d.allows("packages") {
		for name, rng := range d.Packages {
			out[name] = dep{name, rng}
		}
	}
	if d.allows("manifest") {
		m, err := nearestManifest(dir)
		if err != nil {
			return nil, err
		}
		add(m)
	}
	if d.allows("config") {
		for _, f := range d.ConfigManifests {
			m, err := readManifest(f)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, err
			}
			add(m)
		}
	}
	return out, nil
}

// nearestManifest reads the first package.json or deno.json found from dir
// upward (both, when one directory holds both).
func nearestManifest(dir string) (map[string]dep, error) {
	for d := dir; ; d = filepath.Dir(d) {
		out := map[string]dep{}
		found := false
		for _, f := range []string{"deno.json", "package.json"} {
			m, err := readManifest(filepath.Join(d, f))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			found = true
			maps.Copy(out, m)
		}
		if found || filepath.Dir(d) == d {
			return out, nil
		}
	}
}

// readManifest reads a package.json's dependencies and devDependencies, or
// a deno.json's npm: imports. An error names the file.
func readManifest(path string) (map[string]dep, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m struct {
		Dependencies    map[string]string `json:"dependencies"`
		DevDependencies map[string]string `json:"devDependencies"`
		Imports         map[string]string `json:"imports"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("reading the dependencies of %s: %v; fix its JSON", path, err)
	}
	out := map[string]dep{}
	if filepath.Base(path) == "deno.json" {
		for k, v := range m.Imports {
			if name, rng, sub, err := parseNPM(v); err == nil && sub == "" {
				out[strings.TrimSuffix(k, "/")] = dep{name, rng}
			}
		}
		return out, nil
	}
	for _, deps := range []map[string]string{m.DevDependencies, m.Dependencies} {
		for k, v := range deps {
			out[k] = dep{k, v}
		}
	}
	return out, nil
}

// parseNPM splits an npm: specifier, "npm:@scope/name@^1.2/sub/path", into
// its package name, version range ("" = latest) and subpath ("/sub/path").
func parseNPM(spec string) (name, rng, sub string, err error) {
	rest, ok := strings.CutPrefix(spec, "npm:")
	if !ok {
		return "", "", "", fmt.Errorf("%s is not an npm: specifier", spec)
	}
	rest = strings.TrimPrefix(rest, "/")
	name, sub = splitPackage(rest)
	if at := strings.LastIndex(name, "@"); at > 0 {
		name, rng = name[:at], name[at+1:]
	}
	if name == "" || name == "@" || strings.HasSuffix(name, "/") {
		return "", "", "", fmt.Errorf("%s names no package; write npm:<name>[@<version>][/<path>], such as npm:is-number@7", spec)
	}
	return name, rng, sub, nil
}

// splitPackage splits an import path into its package part (name, or
// @scope/name, with any @version) and the subpath after it.
func splitPackage(p string) (pkg, sub string) {
	n := 1
	if strings.HasPrefix(p, "@") {
		n = 2
	}
	parts := strings.SplitN(p, "/", n+1)
	if len(parts) <= n {
		return p, ""
	}
	return strings.Join(parts[:n], "/"), "/" + parts[n]
}

// depResolver is the bundle's resolution of packages: it records the set a
// first build needs (dir == "": each package is left an import), and
// resolves the packages in the set's installed directory dir in the second.
type depResolver struct {
	deps     *Deps
	declared map[string]dep
	dir      string

	mu   sync.Mutex
	want map[string]string // name → range
}

// guard marks the resolutions the plugin asks esbuild for itself.
type guard struct{}

func (r *depResolver) plugin() api.Plugin {
	return api.Plugin{Name: "mcpx-deps", Setup: func(b api.PluginBuild) {
		b.OnResolve(api.OnResolveOptions{Filter: `^[^./]`}, func(a api.OnResolveArgs) (api.OnResolveResult, error) {
			if _, ok := a.PluginData.(guard); ok || strings.Contains(a.Importer, string(filepath.Separator)+"node_modules"+string(filepath.Separator)) ||
				strings.HasPrefix(a.Path, "node:") {
				return api.OnResolveResult{}, nil
			}
			return r.resolve(b, a)
		})
	}}
}

func (r *depResolver) resolve(b api.PluginBuild, a api.OnResolveArgs) (api.OnResolveResult, error) {
	switch {
	case strings.HasPrefix(a.Path, "jsr:"):
		if r.deps.Runtime == "deno" && r.deps.allows("specifiers") {
			return api.OnResolveResult{Path: a.Path, External: true}, nil // deno fetches it
		}
		if r.deps.Runtime != "deno" {
			return api.OnResolveResult{}, fmt.Errorf("%s: jsr: packages run on deno only (--runtime deno); on %s import the package's npm form (jsr.io names it on the package's page)", a.Path, r.deps.Runtime)
		}
		return api.OnResolveResult{}, fmt.Errorf(`%s: script.deps.from has no "specifiers", so no jsr: or npm: import is installed; add "specifiers"`, a.Path)
	case strings.HasPrefix(a.Path, "npm:"):
		if !r.deps.allows("specifiers") {
			return api.OnResolveResult{}, fmt.Errorf(`%s: script.deps.from has no "specifiers", so no npm: import is installed; add "specifiers", or declare the package (script.deps.packages, the project's package.json) and import it by name`, a.Path)
		}
		name, rng, sub, err := parseNPM(a.Path)
		if err != nil {
			return api.OnResolveResult{}, err
		}
		return r.inSet(b, a, dep{name, rng}, sub)
	}
	pkg, sub := splitPackage(a.Path)
	d, ok := r.declared[pkg]
	if !ok {
		if r.deps.allows("host") {
			return api.OnResolveResult{}, nil // as node_modules on disk have it
		}
		return r.notHost(b, a, pkg)
	}
	if r.deps.allows("host") {
		if res := b.Resolve(a.Path, resolveOpts(a, a.ResolveDir)); len(res.Errors) == 0 {
			return api.OnResolveResult{Path: res.Path, External: res.External, Namespace: res.Namespace, SideEffects: sideEffects(res.SideEffects)}, nil
		}
	}
	return r.inSet(b, a, d, sub)
}

// notHost refuses a package that node_modules on disk would give, when the
// host is not a source; a node builtin ("fs") stays an import.
func (r *depResolver) notHost(b api.PluginBuild, a api.OnResolveArgs, pkg string) (api.OnResolveResult, error) {
	res := b.Resolve(a.Path, resolveOpts(a, a.ResolveDir))
	if len(res.Errors) > 0 || res.External {
		return api.OnResolveResult{}, nil
	}
	return api.OnResolveResult{}, fmt.Errorf(`package %s is not one of the script's dependencies, and script.deps.from has no "host" (node_modules on disk): declare it (script.deps.packages, the project's package.json), import it as npm:%s, or add "host"`, pkg, pkg)
}

// inSet records d as one of the set's packages (first build) or resolves
// its path in the installed set (second).
func (r *depResolver) inSet(b api.PluginBuild, a api.OnResolveArgs, d dep, sub string) (api.OnResolveResult, error) {
	r.mu.Lock()
	if have, ok := r.want[d.name]; ok && have != d.rng {
		r.mu.Unlock()
		return api.OnResolveResult{}, fmt.Errorf("package %s is asked for as %q and as %q: one run has one version of a package; use one range", d.name, have, d.rng)
	}
	r.want[d.name] = d.rng
	r.mu.Unlock()
	if r.dir == "" {
		return api.OnResolveResult{Path: a.Path, External: true}, nil
	}
	res := b.Resolve(d.name+sub, resolveOpts(a, r.dir))
	if len(res.Errors) > 0 {
		return api.OnResolveResult{}, fmt.Errorf("%s: installed in %s, but %s does not resolve there: %s", a.Path, r.dir, d.name+sub, res.Errors[0].Text)
	}
	return api.OnResolveResult{Path: res.Path, External: res.External, Namespace: res.Namespace, SideEffects: sideEffects(res.SideEffects)}, nil
}

func resolveOpts(a api.OnResolveArgs, dir string) api.ResolveOptions {
	return api.ResolveOptions{ResolveDir: dir, Kind: a.Kind, Importer: a.Importer, PluginData: guard{}}
}

func sideEffects(b bool) api.SideEffects {
	if b {
		return api.SideEffectsTrue
	}
	return api.SideEffectsFalse
}

// hintMissing adds the fix to esbuild's message of a package nothing has.
func hintMissing(msgs []api.Message) {
	for i, m := range msgs {
		name, ok := strings.CutPrefix(m.Text, `Could not resolve "`)
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, `"`)
		if name == "" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "/") {
			continue
		}
		pkg, _ := splitPackage(name)
		msgs[i].Text = fmt.Sprintf("package %s is not installed, nor a dependency of the script: import it as npm:%s, declare it (the project's package.json, script.deps.packages), or install it (npm install %s)", pkg, pkg, pkg)
	}
}

// requireBanner gives the bundle a require, on one line (the source map
// accounts for it).
const requireBanner = `import { createRequire as __mcpxCreateRequire } from "node:module"; const require = __mcpxCreateRequire(import.meta.url);`

// bundleDeps builds bo with the packages of opts.Deps: a first build
// records the set the script imports; when it has one, the set is
// installed (or found installed) and the script built again against it.
func bundleDeps(opts BundleOptions, bo api.BuildOptions) (api.BuildResult, error) {
	dir := opts.SourceDir
	if opts.Source == "" {
		dir = filepath.Dir(opts.Entry)
	}
	declared, err := opts.Deps.declared(dir)
	if err != nil {
		return api.BuildResult{}, err
	}
	r := &depResolver{deps: opts.Deps, declared: declared, want: map[string]string{}}
	bo.Plugins = append(slices.Clone(bo.Plugins), r.plugin())
	// The first build is the one unless the script imports packages of
	// the set: they are left imports in it, and it is built again.
	if res := api.Build(bo); len(res.Errors) > 0 || len(r.want) == 0 {
		hintMissing(res.Errors)
		return res, nil
	}
	if r.dir, err = opts.Deps.install(r.want); err != nil {
		return api.BuildResult{}, err
	}
	// A CommonJS package's require of a builtin ("fs") is esbuild's
	// __require, which needs a require in scope in an ES module.
	bo.Banner = map[string]string{"js": requireBanner}
	return api.Build(bo), nil
}
