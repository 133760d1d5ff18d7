package scripts

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// The sources the prefix and suffix lines are named by in the bundle's
// source map and in a stack (line N is the Nth of the merged lines).
const (
	prefixSource = "mcpx:script.prefix"
	suffixSource = "mcpx:script.suffix"
)

// suffixHook is where the entry module leaves its suffix function for the
// launcher, which calls it in its finally with script and result.
const suffixHook = `globalThis[Symbol.for("mcpx.suffix")] = $mcpxSuffix;`

// origin is where a line of the entry module comes from: the script's own
// line (source ""), a prefix or suffix line, or none (mcpx's own).
type origin struct {
	source string // "", prefixSource, suffixSource; none: line 0
	line   int    // 1-based; 0 = mcpx's own line, unmapped
}

// entry is the module the bundle is built from: the prefix lines, the
// script's source and the suffix lines, one module in that order, so that
// the lines share the script's scope — a prefix's const or import is the
// script's (a snippet's) to use, and the suffix sees both. Its first line
// hands the suffix function (hoisted) to the launcher; the suffix lines are
// its body, but those that are import declarations, which stand after it
// at the top level (an import is hoisted wherever it stands). lines says
// where each line came from, for the source map and for errors.
type entry struct {
	text  string
	lines []origin // per line of text, 0-based
}

// suffixImport matches a line that is an import declaration (not import()
// or import.meta).
var suffixImport = regexp.MustCompile(`^\s*import(?:\s+type)?\s*(?:[\w$*{]|["'])`)

// newEntry composes opts' entry module from body, the script's source, whose
// first preamble lines are mcpx's own (ExecModule's import line).
func newEntry(opts BundleOptions, body string, preamble int) entry {
	var e entry
	add := func(text, source string, first int) {
		for i, l := range strings.Split(text, "\n") {
			e.text += l + "\n"
			if first == 0 {
				e.lines = append(e.lines, origin{})
			} else {
				e.lines = append(e.lines, origin{source, first + i})
			}
		}
	}
	harness := !opts.Minimal
	if harness {
		add(suffixHook, "", 0)
		add(strings.Join(opts.Prefix, "\n"), prefixSource, 1)
	}
	// A shebang stands only first: it becomes a comment of the same line.
	if strings.HasPrefix(body, "#!") {
		body = "//" + body[2:]
	}
	body = strings.TrimSuffix(body, "\n")
	for i, l := range strings.Split(body, "\n") {
		if i < preamble {
			add(l, "", 0)
		} else {
			add(l, "", i+1-preamble)
		}
	}
	if !harness {
		return e
	}
	add(";async function $mcpxSuffix(script, result) {", "", 0)
	var imports []int
	n := 1
	for _, l := range opts.Suffix {
		if suffixImport.MatchString(l) {
			imports = append(imports, n)
		} else {
			add(l, suffixSource, n)
		}
		n += strings.Count(l, "\n") + 1
	}
	add("}", "", 0)
	n = 1
	for _, l := range opts.Suffix {
		if len(imports) > 0 && imports[0] == n {
			add(l, suffixSource, n)
			imports = imports[1:]
		}
		n += strings.Count(l, "\n") + 1
	}
	return e
}

// origin is where line (1-based) of the entry came from.
func (e entry) origin(line int) origin {
	if line < 1 || line > len(e.lines) {
		return origin{}
	}
	return e.lines[line-1]
}

// loaderFor is esbuild's loader for a script file by its extension.
func loaderFor(path string) api.Loader {
	switch filepath.Ext(path) {
	case ".ts", ".mts", ".cts":
		return api.LoaderTS
	case ".tsx":
		return api.LoaderTSX
	case ".jsx":
		return api.LoaderJSX
	}
	return api.LoaderJS
}

// entryPlugin gives esbuild the entry module in place of the script file.
func entryPlugin(path string, e entry) api.Plugin {
	return api.Plugin{Name: "mcpx-entry", Setup: func(b api.PluginBuild) {
		b.OnLoad(api.OnLoadOptions{Filter: "^" + regexp.QuoteMeta(path) + "$", Namespace: "file"}, func(api.OnLoadArgs) (api.OnLoadResult, error) {
			return api.OnLoadResult{Contents: &e.text, Loader: loaderFor(path), ResolveDir: filepath.Dir(path)}, nil
		})
	}}
}

// readEntry is the script file's source.
func readEntry(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}
