package deptest_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// domain is a rule set shaped like the real domain packages' rules.
var domain = deptest.Rules{
	BadDeps: map[string]string{
		"example.com/layered/api": "no server side",
		"net/http/httptest":       "no test servers",
	},
	BadImports:   map[string]string{"net/http": "no HTTP at all"},
	NoHTTPServer: "an HTTP client only",
}

// TestRulesCatch runs the checker over a synthetic module that breaks every
// kind of rule, so a checker that silently passes everything fails here.
func TestRulesCatch(t *testing.T) {
	dir := writeModule(t, map[string]string{
		"go.mod": "module example.com/layered\n\ngo 1.26\n",
		"api/api.go": `package api

import "net/http"

func Routes() http.Handler { return http.NewServeMux() }
`,
		"api/wire/wire.go": `package wire

const Header = "Mcpx-Cwd"
`,
		"domain/domain.go": `package domain

import (
	_ "example.com/layered/api/wire" // allowed: only the exact api package is bad
	"example.com/layered/api"
)

var _ = api.Routes
`,
		"domain/serve.go": `package domain

import nethttp "net/http"

func Serve(h nethttp.HandlerFunc) error { return nethttp.ListenAndServe("127.0.0.1:0", h) }

func Shadow() int {
	nethttp := struct{ Server int }{}
	return nethttp.Server
}
`,
		"domain/domain_test.go": `package domain

import (
	"net/http"
	"testing"
)

// Tests may serve HTTP.
func TestX(t *testing.T) { _ = http.Server{} }
`,
		"domain/inner/inner.go": `package inner

import _ "example.com/layered/domain/inner/deeper"
`,
		"domain/inner/deeper/deeper.go": `package deeper

import _ "net/http/httptest"
`,
	})
	got, err := domain.Violations(filepath.Join(dir, "domain"), moduleEnv())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"example.com/layered/domain/inner/deeper: depends on net/http/httptest (example.com/layered/domain/inner/deeper -> net/http/httptest): no test servers",
		"example.com/layered/domain/inner: depends on net/http/httptest (example.com/layered/domain/inner -> example.com/layered/domain/inner/deeper -> net/http/httptest): no test servers",
		"example.com/layered/domain: depends on example.com/layered/api (example.com/layered/domain -> example.com/layered/api): no server side",
		"example.com/layered/domain: imports net/http: no HTTP at all",
		"serve.go:5:14: uses net/http server identifier http.HandlerFunc: an HTTP client only",
		"serve.go:5:50: uses net/http server identifier http.ListenAndServe: an HTTP client only",
	}
	var trimmed []string
	for _, v := range got {
		if strings.HasPrefix(v, dir) {
			i := strings.Index(v, ".go:") + 3
			v = filepath.Base(v[:i]) + v[i:]
		}
		trimmed = append(trimmed, v)
	}
	slices.Sort(trimmed)
	if !slices.Equal(trimmed, want) {
		t.Errorf("violations:\n\t%s\nwant:\n\t%s", strings.Join(trimmed, "\n\t"), strings.Join(want, "\n\t"))
	}

	// The api tree itself breaks none of these rules: the checker looks only
	// under the directory it is given.
	clean, err := domain.Violations(filepath.Join(dir, "api", "wire"), moduleEnv())
	if err != nil {
		t.Fatal(err)
	}
	if len(clean) != 0 {
		t.Errorf("api/wire: unexpected violations %q", clean)
	}
}

// TestStdlibOnly: a leaf may import the standard library and its own
// subpackages, nothing else.
func TestStdlibOnly(t *testing.T) {
	dir := writeModule(t, map[string]string{
		"go.mod":           "module example.com/leafy\n\ngo 1.26\n",
		"other/other.go":   "package other\n",
		"leaf/leaf.go":     "package leaf\n\nimport (\n\t_ \"strings\"\n\n\t_ \"example.com/leafy/leaf/inner\"\n)\n",
		"leaf/inner/in.go": "package inner\n\nimport _ \"example.com/leafy/other\"\n",
		"clean/clean.go":   "package clean\n\nimport _ \"fmt\"\n",
	})
	rules := deptest.Rules{StdlibOnly: "a leaf"}
	got, err := rules.Violations(filepath.Join(dir, "leaf"), moduleEnv())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"example.com/leafy/leaf/inner: imports example.com/leafy/other, outside the standard library: a leaf"}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
	if got, err := rules.Violations(filepath.Join(dir, "clean"), moduleEnv()); err != nil || len(got) != 0 {
		t.Errorf("clean: %q, %v; want no violations", got, err)
	}
}

// TestLeavesOnly: a package may import the standard library, its own
// subpackages and leaves (packages of the standard library alone), nothing
// that brings further packages with it.
func TestLeavesOnly(t *testing.T) {
	dir := writeModule(t, map[string]string{
		"go.mod":             "module example.com/leafy\n\ngo 1.26\n",
		"leaf/leaf.go":       "package leaf\n\nimport _ \"strings\"\n",
		"heavy/heavy.go":     "package heavy\n\nimport _ \"example.com/leafy/leaf\"\n",
		"cfg/cfg.go":         "package cfg\n\nimport (\n\t_ \"fmt\"\n\n\t_ \"example.com/leafy/cfg/inner\"\n\t_ \"example.com/leafy/leaf\"\n)\n",
		"cfg/inner/inner.go": "package inner\n\nimport _ \"example.com/leafy/heavy\"\n",
	})
	rules := deptest.Rules{LeavesOnly: "a leaf over leaves"}
	got, err := rules.Violations(filepath.Join(dir, "cfg"), moduleEnv())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"example.com/leafy/cfg/inner: imports example.com/leafy/heavy, which is not a leaf (it imports example.com/leafy/leaf): a leaf over leaves"}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
	if got, err := rules.Violations(filepath.Join(dir, "heavy"), moduleEnv()); err != nil || len(got) != 0 {
		t.Errorf("heavy: %q, %v; want no violations (it imports a leaf)", got, err)
	}
}

// TestLeaves: a tree that may depend on the standard library only may
// import a named leaf, so long as the leaf depends on nothing more.
func TestLeaves(t *testing.T) {
	dir := writeModule(t, map[string]string{
		"go.mod":           "module example.com/leaves\n\ngo 1.26\n",
		"rights/rights.go": "package rights\n\nimport _ \"strings\"\n",
		"dirty/dirty.go":   "package dirty\n\nimport _ \"example.com/leaves/other\"\n",
		"other/other.go":   "package other\n",
		"wire/wire.go":     "package wire\n\nimport (\n\t_ \"example.com/leaves/rights\"\n\t_ \"example.com/leaves/dirty\"\n)\n",
		"wire/inner/in.go": "package inner\n\nimport _ \"example.com/leaves/other\"\n",
		"clean/clean.go":   "package clean\n\nimport _ \"example.com/leaves/rights\"\n",
	})
	rules := deptest.Rules{StdlibOnly: "the contract", Leaves: map[string]string{
		"example.com/leaves/rights": "plain values",
		"example.com/leaves/dirty":  "claims to be a leaf",
	}}
	got, err := rules.Violations(filepath.Join(dir, "wire"), moduleEnv())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"example.com/leaves/wire/inner: imports example.com/leaves/other, outside the standard library: the contract",
		"example.com/leaves/wire: imports the leaf example.com/leaves/dirty, which depends on example.com/leaves/other, outside the standard library: the contract",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
	if got, err := rules.Violations(filepath.Join(dir, "clean"), moduleEnv()); err != nil || len(got) != 0 {
		t.Errorf("clean: %q, %v; want no violations", got, err)
	}
}

// TestImports: a tree may import, beside the standard library and its
// own packages, only the packages Imports lists; a listed package no one
// imports is reported too.
func TestImports(t *testing.T) {
	dir := writeModule(t, map[string]string{
		"go.mod":            "module example.com/allow\n\ngo 1.26\n",
		"client/client.go":  "package client\n\nimport _ \"example.com/allow/heavy\"\n",
		"heavy/heavy.go":    "package heavy\n",
		"wire/wire.go":      "package wire\n",
		"other/other.go":    "package other\n",
		"relay/relay.go":    "package relay\n\nimport (\n\t_ \"fmt\"\n\n\t_ \"example.com/allow/client\"\n\t_ \"example.com/allow/relay/inner\"\n)\n",
		"relay/inner/in.go": "package inner\n\nimport _ \"example.com/allow/other\"\n",
		"clean/clean.go":    "package clean\n\nimport _ \"example.com/allow/client\"\n",
	})
	rules := deptest.Rules{Imports: map[string]string{
		"example.com/allow/client": "the Go client",
		"example.com/allow/wire":   "the contract",
	}}
	got, err := rules.Violations(filepath.Join(dir, "relay"), moduleEnv())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Imports names example.com/allow/wire, which no package under " + filepath.Join(dir, "relay") + " imports",
		"example.com/allow/relay/inner: imports example.com/allow/other, which Imports does not list",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
	clean := deptest.Rules{Imports: map[string]string{"example.com/allow/client": "the Go client"}}
	if got, err := clean.Violations(filepath.Join(dir, "clean"), moduleEnv()); err != nil || len(got) != 0 {
		t.Errorf("clean: %q, %v; want no violations (the client's own imports are its own)", got, err)
	}
}

// TestRulesNeedAPackage: a directory with no Go package is an error, not a
// pass.
func TestRulesNeedAPackage(t *testing.T) {
	dir := writeModule(t, map[string]string{
		"go.mod":     "module example.com/empty\n\ngo 1.26\n",
		"doc/README": "no Go here\n",
	})
	if _, err := domain.Violations(filepath.Join(dir, "doc"), moduleEnv()); err == nil {
		t.Error("Violations over a directory with no package: no error")
	}
}

func writeModule(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func moduleEnv() []string {
	return append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
}

// TestExceptions: Except leaves a subpackage to its own rules, and
// HTTPServerFiles lets one named file serve HTTP; the rest of the tree is
// still bound, and an exception that names nothing is itself reported.
func TestExceptions(t *testing.T) {
	dir := writeModule(t, map[string]string{
		"go.mod":          "module example.com/exc\n\ngo 1.26\n",
		"bad/bad.go":      "package bad\n",
		"top/top.go":      "package top\n",
		"top/relay.go":    "package top\n\nimport \"net/http\"\n\nvar Relay http.Handler\n",
		"top/serve.go":    "package top\n\nimport \"net/http\"\n\nvar Mux = http.NewServeMux\n",
		"top/own/own.go":  "package own\n\nimport _ \"example.com/exc/bad\"\n",
		"top/more/in.go":  "package more\n\nimport _ \"example.com/exc/bad\"\n",
		"top/uses/use.go": "package uses\n\nimport _ \"example.com/exc/top/own\"\n",
	})
	rules := deptest.Rules{
		BadDeps:         map[string]string{"example.com/exc/bad": "bad"},
		NoHTTPServer:    "no server",
		HTTPServerFiles: map[string]string{"example.com/exc/top/relay.go": "the one server", "example.com/exc/top/gone.go": "stale"},
		Except:          map[string]string{"example.com/exc/top/own": "its own rules", "example.com/exc/top/none/...": "stale"},
	}
	got, err := rules.Violations(filepath.Join(dir, "top"), moduleEnv())
	if err != nil {
		t.Fatal(err)
	}
	var trimmed []string
	for _, v := range got {
		trimmed = append(trimmed, strings.ReplaceAll(v, dir, "DIR"))
	}
	want := []string{
		"DIR/top/serve.go:5:11: uses net/http server identifier http.NewServeMux: no server",
		"Except names example.com/exc/top/none/..., which matches no package under DIR/top",
		"HTTPServerFiles names example.com/exc/top/gone.go, which is no file of the packages under DIR/top",
		"example.com/exc/top/more: depends on example.com/exc/bad (example.com/exc/top/more -> example.com/exc/bad): bad",
		"example.com/exc/top/uses: depends on example.com/exc/bad (example.com/exc/top/uses -> example.com/exc/top/own -> example.com/exc/bad): bad",
	}
	slices.Sort(trimmed)
	if !slices.Equal(trimmed, want) {
		t.Errorf("violations:\n\t%s\nwant:\n\t%s", strings.Join(trimmed, "\n\t"), strings.Join(want, "\n\t"))
	}
}
