package scripts

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// ExecName is the name `mcpx exec`'s generated module is known by, in
// stack traces, messages and the envelope.
const ExecName = "exec.ts"

// ExecPreamble is how many lines of ExecModule's module come before the
// snippet's first (BundleOptions.Preamble).
const ExecPreamble = 1

// ExecModule returns the module `mcpx exec` runs around snippet: every
// export of the generated client (each server's object, log, callTool, ...)
// in scope by name, and the snippet as the body of the default export, an
// async function of args, so that `return` gives the value printed. A
// snippet that is one expression is returned as it is (`demo.add({a:1,b:2})`
// prints the result). client is the generated client module's file.
// The client's names are the function's own (destructured from the module's
// namespace in it), so that the prefix lines, at the module's top level,
// may import or declare the same names without a clash; the snippet is a
// block inside, so that its own declarations shadow them. minimal (run with
// no harness, which calls no function): the snippet is the module's
// top-level code. The first line (ExecPreamble) holds the whole preamble.
func ExecModule(snippet, client string, minimal bool) (string, error) {
	names, err := moduleExports(client)
	if err != nil {
		return "", err
	}
	if minimal {
		return "import { " + strings.Join(names, ", ") + " } from \"mcpx\";\n" + snippet + "\n", nil
	}
	head := "import * as $mcpxClient from \"mcpx\"; export default async function (args: any): Promise<unknown> { const { " +
		strings.Join(names, ", ") + " } = $mcpxClient; {"
	if expr := strings.TrimRight(strings.TrimSpace(snippet), ";"); expr != "" {
		lead := strings.Repeat("\n", strings.Count(snippet[:len(snippet)-len(strings.TrimLeft(snippet, " \t\r\n"))], "\n"))
		mod := head + " return (\n" + lead + expr + "\n);\n}}\n"
		if parses(mod) {
			return mod, nil
		}
	}
	return head + "\n" + snippet + "\n}}\n", nil
}

// parses reports whether src is a module esbuild can parse.
func parses(src string) bool {
	return len(api.Transform(src, api.TransformOptions{Loader: api.LoaderTS, Format: api.FormatESModule, LogLevel: api.LogLevelSilent}).Errors) == 0
}

// moduleExports lists the value exports of the module file path.
func moduleExports(path string) ([]string, error) {
	res := api.Build(api.BuildOptions{
		EntryPoints: []string{path},
		Outdir:      "/nonexistent", // not written
		Bundle:      false,
		Write:       false,
		Metafile:    true,
		Format:      api.FormatESModule,
		LogLevel:    api.LogLevelSilent,
	})
	if len(res.Errors) > 0 {
		return nil, fmt.Errorf("reading the generated client's exports: %s", res.Errors[0].Text)
	}
	var meta struct {
		Outputs map[string]struct {
			Exports []string `json:"exports"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal([]byte(res.Metafile), &meta); err != nil {
		return nil, fmt.Errorf("reading the generated client's exports: %w", err)
	}
	var names []string
	for _, o := range meta.Outputs {
		names = append(names, o.Exports...)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}
