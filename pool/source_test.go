package pool

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Tests that read the package's source.

// forEachFunc calls visit for every function with a body in the package's
// non-test files.
func forEachFunc(t *testing.T, visit func(fset *token.FileSet, file string, fn *ast.FuncDecl)) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Body != nil {
				visit(fset, name, fn)
			}
		}
	}
}

// TestPoolLockReleasedOnlyByUnlock reads the package's source: Pool.mu is
// released only by unlock and unlockThen (which emit the records gathered
// under it),
// and no function named …Locked, which runs under a lock, calls a logger.
func TestPoolLockReleasedOnlyByUnlock(t *testing.T) {
	logMethods := []string{"Debug", "Info", "Warn", "Error", "Log", "LogAttrs", "DebugContext", "InfoContext", "WarnContext", "ErrorContext"}
	forEachFunc(t, func(fset *token.FileSet, _ string, fn *ast.FuncDecl) {
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := c.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if sel.Sel.Name == "Unlock" && isPoolMu(sel.X) && fn.Name.Name != "unlock" && fn.Name.Name != "unlockThen" {
				t.Errorf("%s: %s releases p.mu itself; use p.unlock, which emits the records gathered under it", fset.Position(c.Pos()), fn.Name.Name)
			}
			if strings.HasSuffix(fn.Name.Name, "Locked") && slices.Contains(logMethods, sel.Sel.Name) && isLogger(sel.X) {
				t.Errorf("%s: %s logs under a lock; gather the record with logLocked", fset.Position(c.Pos()), fn.Name.Name)
			}
			return true
		})
	})
}

// isPoolMu reports whether x is p.mu.
func isPoolMu(x ast.Expr) bool {
	sel, ok := x.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "mu" {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == "p"
}

// isLogger reports whether x looks like a logger: log, or something.log.
func isLogger(x ast.Expr) bool {
	switch x := x.(type) {
	case *ast.Ident:
		return x.Name == "log"
	case *ast.SelectorExpr:
		return x.Sel.Name == "log"
	}
	return false
}
