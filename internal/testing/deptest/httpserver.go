package deptest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

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

// serverIdentUses parses p's non-test files and reports each use of a
// server-side net/http identifier, and dot imports of net/http. Files named
// in except (import path/base name) are skipped, and marked in seen.
func serverIdentUses(p *pkg, why string, except map[string]string, seen map[string]bool) ([]string, error) {
	var out []string
	files := slices.Concat(p.GoFiles, p.CgoFiles, p.IgnoredGoFiles)
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || !strings.HasSuffix(name, ".go") {
			continue
		}
		if key := p.ImportPath + "/" + name; hasKey(except, key) {
			seen[key] = true
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
			out = append(out, fmt.Sprintf("%s: dot-imports net/http: %s", fset.Position(f.Package), why))
			continue
		}
		out = append(out, selectorUses(fset, f, local, why)...)
	}
	return out, nil
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// selectorUses finds local.X for forbidden X where local still names the
// net/http import (not a shadowing variable or parameter).
func selectorUses(fset *token.FileSet, f *ast.File, local, why string) []string {
	var out []string
	// Scopes are tracked coarsely: a function that declares a parameter,
	// result or variable named local is skipped entirely. Good enough for a
	// guard whose failure a human reads.
	walk := func(n ast.Node) bool {
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
				out = append(out, fmt.Sprintf("%s: uses net/http server identifier http.%s: %s",
					fset.Position(n.Pos()), n.Sel.Name, why))
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
