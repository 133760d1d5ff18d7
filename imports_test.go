package mcpx_test

// The dependency direction of DESIGN.md, enforced:
//
//	cmd -> api, tsnet -> broker -> pool, nixresolve
//
// The domain packages (broker, pool, nixresolve and their subpackages) never
// see HTTP servers, chi, tailscale or the api package: "Server logic never
// sees an *http.Request". They may be HTTP *clients* (pool speaks streamable
// HTTP to url children), so net/http itself is allowed, but not its
// server-side identifiers.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// layerRule restricts the packages under one module-relative directory.
type layerRule struct {
	// pkg is a module-relative package path; it covers its subpackages too.
	pkg string
	// forbidden are import paths the package must not depend on, directly or
	// transitively. "{mod}/" stands for the module path; each entry covers its
	// subpackages ("tailscale.com" covers "tailscale.com/tsnet").
	forbidden []string
	// direct are import paths the package's own files must not import (their
	// dependencies may).
	direct []string
	// serverIdents forbids server-side net/http identifiers in non-test files.
	serverIdents bool
}

var domainForbidden = []string{
	"github.com/go-chi/chi/v5",
	"tailscale.com",
	"net/http/httptest",
	"{mod}/api",
	"{mod}/tsnet",
	"{mod}/cmd",
}

var layerRules = []layerRule{
	{pkg: "broker", forbidden: domainForbidden, serverIdents: true},
	{pkg: "pool", forbidden: append(slices.Clip(domainForbidden), "{mod}/broker"), serverIdents: true},
	// nixresolve: "No HTTP" at all in its own code.
	{pkg: "nixresolve", forbidden: append(slices.Clip(domainForbidden), "{mod}/broker", "{mod}/pool"), direct: []string{"net/http"}, serverIdents: true},
}

// serverIdents are net/http identifiers that only HTTP server code uses.
var serverIdents = map[string]bool{
	"Server": true, "Handler": true, "HandlerFunc": true, "ResponseWriter": true,
	"ListenAndServe": true, "ListenAndServeTLS": true, "Serve": true, "ServeTLS": true,
	"ServeMux": true, "NewServeMux": true, "Handle": true, "HandleFunc": true,
	"DefaultServeMux": true, "Hijacker": true, "Flusher": true, "FileServer": true,
	"FileServerFS": true, "StripPrefix": true, "TimeoutHandler": true,
	"MaxBytesHandler": true, "ServeFile": true, "ServeContent": true,
	"NewResponseController": true, "AllowQuerySemicolons": true,
}

// listedPackage is the part of `go list -json` the checker reads.
type listedPackage struct {
	ImportPath     string
	Dir            string
	Module         *struct{ Path string }
	Standard       bool
	GoFiles        []string
	CgoFiles       []string
	IgnoredGoFiles []string // other GOOS/GOARCH/tags: still checked
	Imports        []string
	Error          *struct{ Err string }
}

// checkLayering lists every package of the module in dir with its
// dependencies and returns one line per violation of rules, sorted. It fails
// if none of the rules' packages exists (a silent pass would prove nothing).
func checkLayering(dir string, env []string, rules []layerRule) ([]string, error) {
	cmd := exec.Command("go", "list", "-e", "-deps", "-json=ImportPath,Dir,Module,Standard,GoFiles,CgoFiles,IgnoredGoFiles,Imports,Error", "./...")
	cmd.Dir = dir
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list in %s: %v\n%s", dir, err, stderr.Bytes())
	}
	pkgs := map[string]*listedPackage{}
	var order []*listedPackage
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		p := new(listedPackage)
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decoding go list output: %v", err)
		}
		pkgs[p.ImportPath] = p
		order = append(order, p)
	}
	mod, err := mainModule(dir, env)
	if err != nil {
		return nil, err
	}

	var violations []string
	checked := 0
	for _, p := range order {
		if p.Module == nil || p.Module.Path != mod {
			continue
		}
		for _, r := range rules {
			if !under(p.ImportPath, mod+"/"+r.pkg) {
				continue
			}
			checked++
			if p.Error != nil {
				// A package mid-edit may not load; report what can be checked.
				violations = append(violations, fmt.Sprintf("%s: does not load: %s", p.ImportPath, p.Error.Err))
			}
			violations = append(violations, forbiddenDeps(p, pkgs, mod, r)...)
			if r.serverIdents {
				v, err := serverIdentUses(p)
				if err != nil {
					return nil, err
				}
				violations = append(violations, v...)
			}
		}
	}
	if checked == 0 {
		return nil, fmt.Errorf("no package of module %s in %s matched any layering rule", mod, dir)
	}
	slices.Sort(violations)
	return slices.Compact(violations), nil
}

func mainModule(dir string, env []string) (string, error) {
	cmd := exec.Command("go", "list", "-m")
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m in %s: %v", dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// under reports whether path is pkg or one of its subpackages.
func under(path, pkg string) bool {
	return path == pkg || strings.HasPrefix(path, pkg+"/")
}

// forbiddenDeps reports each forbidden package p reaches, with the chain of
// imports that reaches it (shortest first found).
func forbiddenDeps(p *listedPackage, pkgs map[string]*listedPackage, mod string, r layerRule) []string {
	expand := func(list []string) []string {
		var out []string
		for _, f := range list {
			out = append(out, strings.ReplaceAll(f, "{mod}", mod))
		}
		return out
	}
	forbidden, direct := expand(r.forbidden), expand(r.direct)
	isForbidden := func(path string, fs []string) bool {
		return slices.ContainsFunc(fs, func(f string) bool { return under(path, f) })
	}

	var out []string
	for _, imp := range p.Imports {
		if isForbidden(imp, direct) {
			out = append(out, fmt.Sprintf("%s: imports %s", p.ImportPath, imp))
		}
	}
	// Breadth-first over the import graph, remembering how we got there.
	via := map[string]string{p.ImportPath: ""}
	queue := []string{p.ImportPath}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		q, ok := pkgs[cur]
		if !ok {
			continue
		}
		for _, imp := range q.Imports {
			if _, seen := via[imp]; seen {
				continue
			}
			via[imp] = cur
			if isForbidden(imp, forbidden) {
				chain := []string{imp}
				for c := cur; c != ""; c = via[c] {
					chain = append(chain, c)
				}
				slices.Reverse(chain)
				out = append(out, fmt.Sprintf("%s: depends on %s (%s)", p.ImportPath, imp, strings.Join(chain, " -> ")))
				continue // its own dependencies are its problem
			}
			queue = append(queue, imp)
		}
	}
	return out
}

// serverIdentUses parses p's non-test files and reports each use of a
// server-side net/http identifier, and dot imports of net/http.
func serverIdentUses(p *listedPackage) ([]string, error) {
	var out []string
	files := slices.Concat(p.GoFiles, p.CgoFiles, p.IgnoredGoFiles)
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || !strings.HasSuffix(name, ".go") {
			continue
		}
		path := filepath.Join(p.Dir, name)
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: does not parse: %v", path, err))
			continue
		}
		local := ""
		for _, imp := range f.Imports {
			if ipath, _ := strconv.Unquote(imp.Path.Value); ipath != "net/http" {
				continue
			}
			local = "http"
			if imp.Name != nil {
				local = imp.Name.Name
			}
		}
		switch local {
		case "", "_":
			continue
		case ".":
			out = append(out, fmt.Sprintf("%s: dot-imports net/http", fset.Position(f.Package)))
			continue
		}
		out = append(out, selectorUses(fset, f, local)...)
	}
	return out, nil
}

// selectorUses finds local.X for forbidden X where local still names the
// net/http import (not a shadowing variable or parameter).
func selectorUses(fset *token.FileSet, f *ast.File, local string) []string {
	var out []string
	// Scopes are tracked coarsely: a function that declares a parameter,
	// result or variable named local is skipped entirely. Good enough for a
	// guard whose failure a human reads.
	var walk func(n ast.Node) bool
	walk = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if declares(n.Type, n.Body, local) || (n.Recv != nil && fieldsDeclare(n.Recv, local)) {
				return false
			}
		case *ast.FuncLit:
			if declares(n.Type, n.Body, local) {
				return false
			}
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && id.Name == local && serverIdents[n.Sel.Name] {
				out = append(out, fmt.Sprintf("%s: uses net/http server identifier http.%s", fset.Position(n.Pos()), n.Sel.Name))
			}
		}
		return true
	}
	ast.Inspect(f, walk)
	return out
}

func declares(ft *ast.FuncType, body *ast.BlockStmt, name string) bool {
	if fieldsDeclare(ft.Params, name) || fieldsDeclare(ft.Results, name) {
		return true
	}
	found := false
	if body != nil {
		ast.Inspect(body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if n.Tok == token.DEFINE {
					for _, l := range n.Lhs {
						if id, ok := l.(*ast.Ident); ok && id.Name == name {
							found = true
						}
					}
				}
			case *ast.ValueSpec:
				for _, id := range n.Names {
					if id.Name == name {
						found = true
					}
				}
			}
			return !found
		})
	}
	return found
}

func fieldsDeclare(fl *ast.FieldList, name string) bool {
	if fl == nil {
		return false
	}
	for _, f := range fl.List {
		for _, id := range f.Names {
			if id.Name == name {
				return true
			}
		}
	}
	return false
}

func TestDependencyDirection(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	violations, err := checkLayering(".", os.Environ(), layerRules)
	if err != nil {
		t.Fatal(err)
	}
	if len(violations) > 0 {
		t.Errorf("the domain packages must not depend on HTTP server code, chi, tailscale or api (DESIGN.md, dependency direction):\n\t%s",
			strings.Join(violations, "\n\t"))
	}
}

// TestDependencyDirectionCatches runs the checker over a synthetic module
// that breaks every rule once, and over the same module's clean parts, so a
// checker that silently passes everything fails here.
func TestDependencyDirectionCatches(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/layered\n\ngo 1.26\n",
		"api/api.go": `package api

import "net/http"

// Routes may use server identifiers: api is the HTTP layer.
func Routes() http.Handler { return http.NewServeMux() }
`,
		"broker/broker.go": `package broker

import (
	"net/http"
	_ "net/http/httptest"

	"example.com/layered/api"
)

var _ = api.Routes

func Serve(h http.HandlerFunc) error { return http.ListenAndServe("127.0.0.1:0", h) }
`,
		"broker/client.go": `package broker

import "net/http"

// Clients are fine.
func Get(c *http.Client, url string) (*http.Response, error) { return c.Get(url) }
`,
		"broker/broker_test.go": `package broker

import (
	"net/http"
	"testing"
)

// Tests may serve HTTP.
func TestX(t *testing.T) { _ = http.Server{} }
`,
		"pool/pool.go": `package pool

import nethttp "net/http"

import _ "example.com/layered/pool/inner"

var s nethttp.Server
`,
		"pool/inner/inner.go": `package inner

import _ "net/http/httptest"
`,
		"nixresolve/nix.go": `package nixresolve

import "net/http"

func Shadow() int {
	http := struct{ Server int }{}
	return http.Server
}

var _ = http.MethodGet
`,
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
	got, err := checkLayering(dir, env, layerRules)
	if err != nil {
		t.Fatal(err)
	}
	// Positions are file:line:col; compare the parts a reader relies on.
	want := []string{
		"broker.go:12:14: uses net/http server identifier http.HandlerFunc",
		"broker.go:12:47: uses net/http server identifier http.ListenAndServe",
		"example.com/layered/broker: depends on example.com/layered/api (example.com/layered/broker -> example.com/layered/api)",
		"example.com/layered/broker: depends on net/http/httptest (example.com/layered/broker -> net/http/httptest)",
		"example.com/layered/nixresolve: imports net/http",
		"example.com/layered/pool/inner: depends on net/http/httptest (example.com/layered/pool/inner -> net/http/httptest)",
		"example.com/layered/pool: depends on net/http/httptest (example.com/layered/pool -> example.com/layered/pool/inner -> net/http/httptest)",
		"pool.go:7:7: uses net/http server identifier http.Server",
	}
	var trimmed []string
	for _, v := range got {
		if strings.HasPrefix(v, dir) {
			v = filepath.Base(v[:strings.Index(v, ".go:")+3]) + v[strings.Index(v, ".go:")+3:]
		}
		trimmed = append(trimmed, v)
	}
	slices.Sort(trimmed)
	if !slices.Equal(trimmed, want) {
		t.Errorf("violations:\n\t%s\nwant:\n\t%s", strings.Join(trimmed, "\n\t"), strings.Join(want, "\n\t"))
	}
}
