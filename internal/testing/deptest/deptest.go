// Package deptest checks a package's dependency rules from the package's own
// tests, so each rule sits next to the code it binds, with its reason (the
// model is Tailscale's tstest/deptest):
//
//	func TestDeps(t *testing.T) {
//		deptest.Rules{
//			BadDeps: map[string]string{
//				"mcpx.dev/mcpx/api/...": "the domain never sees HTTP requests",
//				"tailscale.com/...":     "the tree builds and tests without tsnet",
//			},
//			NoHTTPServer: "pool is an HTTP client of url children, never a server",
//		}.Check(t)
//	}
//
// Rules cover the package in the test's working directory and every package
// under it, so broker's rules also bind broker/internal/gitdir. The
// dependency direction they enforce is drawn in docs/architecture.md.
package deptest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Rules are one package tree's dependency rules. Patterns are import paths;
// a pattern ending in "/..." also covers every path under it
// ("tailscale.com/..." covers "tailscale.com/tsnet"), any other pattern
// names exactly one package ("mcpx.dev/mcpx/api" is the API's server side,
// not "mcpx.dev/mcpx/wire"). Each map's value is why the rule exists; it
// is printed with every violation.
type Rules struct {
	// BadDeps are packages the tree must not depend on, directly or through
	// any chain of imports.
	BadDeps map[string]string
	// BadImports are packages the tree's own files must not import (their
	// dependencies may).
	BadImports map[string]string
	// StdlibOnly, if not "", is why the tree may depend on the standard
	// library only (and on its own packages).
	StdlibOnly string
	// LeavesOnly, if not "", is why the tree may import, beside the
	// standard library and its own packages, only leaves: packages that
	// import the standard library alone. So it depends on nothing else.
	LeavesOnly string
	// Leaves are packages outside the tree that StdlibOnly lets it import
	// all the same, each with why: leaves that depend on the standard
	// library only themselves (checked here too), so the tree still pulls
	// in nothing beyond it.
	Leaves map[string]string
	// Imports, if not empty, are the only packages outside the standard
	// library and the tree that the tree's own files may import, each
	// with why (their own dependencies are theirs: bind those with
	// BadDeps). A pattern no package of the tree imports is a violation:
	// a stale allowance hides nothing.
	Imports map[string]string
	// NoHTTPServer, if not "", is why the tree's non-test files must not use
	// net/http's server-side identifiers (http.Handler, http.Server, …). An
	// HTTP client is allowed.
	NoHTTPServer string
	// HTTPServerFiles are the files NoHTTPServer allows to serve HTTP all
	// the same, each named by its package's import path and its base name
	// ("mcpx.dev/mcpx/scripts/runner/relay.go"), with why. One that names no
	// file of the tree is a violation: a stale exception hides nothing.
	HTTPServerFiles map[string]string
	// Except are packages under the directory that these rules do not
	// cover, with why (a subpackage with rules of its own, in its own
	// deps_test.go). A covered package that imports one still answers for
	// what it reaches through it. A pattern that matches no package of the
	// tree is a violation.
	Except map[string]string
}

// Check fails t with one line per violation of r by the package in the
// current directory (a test's package directory) and the packages under it.
func (r Rules) Check(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("deptest runs go list over the package's dependencies")
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	violations, err := r.Violations(dir, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	if len(violations) > 0 {
		t.Errorf("dependency rules broken:\n\t%s", strings.Join(violations, "\n\t"))
	}
}

// Violations lists r's violations by the packages of dir and below, one line
// each, sorted. env is the environment of the go command. It is an error for
// dir to hold no package: a rule that checks nothing proves nothing.
func (r Rules) Violations(dir string, env []string) ([]string, error) {
	pkgs, order, err := list(dir, env)
	if err != nil {
		return nil, err
	}
	var out []string
	checked := 0
	excepted := map[string]bool{}
	allowed := map[string]bool{}
	imported := map[string]bool{} // the Imports patterns used
	for _, p := range order {
		if p.Standard || !within(p.Dir, dir) {
			continue
		}
		if pat, _, ok := match(p.ImportPath, r.Except); ok {
			excepted[pat] = true
			continue
		}
		checked++
		if p.Error != nil {
			out = append(out, fmt.Sprintf("%s: does not load: %s", p.ImportPath, p.Error.Err))
		}
		out = append(out, r.badImports(p)...)
		out = append(out, r.badDeps(p, pkgs)...)
		if r.StdlibOnly != "" {
			out = append(out, r.nonStandard(p, pkgs, dir)...)
		}
		if r.LeavesOnly != "" {
			out = append(out, nonLeaves(p, pkgs, dir, r.LeavesOnly)...)
		}
		if len(r.Imports) > 0 {
			out = append(out, r.unlisted(p, pkgs, dir, imported)...)
		}
		if r.NoHTTPServer != "" {
			v, err := serverIdentUses(p, r.NoHTTPServer, r.HTTPServerFiles, allowed)
			if err != nil {
				return nil, err
			}
			out = append(out, v...)
		}
	}
	if checked == 0 {
		return nil, fmt.Errorf("deptest: no Go package in %s", dir)
	}
	for pat := range r.Except {
		if !excepted[pat] {
			out = append(out, fmt.Sprintf("Except names %s, which matches no package under %s", pat, dir))
		}
	}
	for pat := range r.Imports {
		if !imported[pat] {
			out = append(out, fmt.Sprintf("Imports names %s, which no package under %s imports", pat, dir))
		}
	}
	for file := range r.HTTPServerFiles {
		if !allowed[file] {
			out = append(out, fmt.Sprintf("HTTPServerFiles names %s, which is no file of the packages under %s", file, dir))
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// pkg is the part of `go list -json` the checker reads.
type pkg struct {
	ImportPath     string
	Dir            string
	Standard       bool
	GoFiles        []string
	CgoFiles       []string
	IgnoredGoFiles []string // other GOOS/GOARCH/tags: still checked
	Imports        []string
	Error          *struct{ Err string }
}

// list runs go list over dir's packages and their dependencies.
func list(dir string, env []string) (map[string]*pkg, []*pkg, error) {
	cmd := exec.Command("go", "list", "-e", "-deps",
		"-json=ImportPath,Dir,Standard,GoFiles,CgoFiles,IgnoredGoFiles,Imports,Error", "./...")
	cmd.Dir = dir
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("go list in %s: %v\n%s", dir, err, stderr.Bytes())
	}
	pkgs := map[string]*pkg{}
	var order []*pkg
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		p := new(pkg)
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, nil, fmt.Errorf("decoding go list output: %v", err)
		}
		pkgs[p.ImportPath] = p
		order = append(order, p)
	}
	return pkgs, order, nil
}

// within reports whether path is dir or lies under it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// match returns the pattern of rules that path matches, and its reason.
func match(path string, rules map[string]string) (string, string, bool) {
	for pat, why := range rules {
		if base, ok := strings.CutSuffix(pat, "/..."); ok {
			if path == base || strings.HasPrefix(path, base+"/") {
				return pat, why, true
			}
		} else if path == pat {
			return pat, why, true
		}
	}
	return "", "", false
}

func (r Rules) badImports(p *pkg) []string {
	var out []string
	for _, imp := range p.Imports {
		if _, why, bad := match(imp, r.BadImports); bad {
			out = append(out, fmt.Sprintf("%s: imports %s: %s", p.ImportPath, imp, why))
		}
	}
	return out
}

// unlisted reports each package outside the standard library and outside
// dir that p imports directly and r.Imports does not name; used records
// the patterns that matched.
func (r Rules) unlisted(p *pkg, pkgs map[string]*pkg, dir string, used map[string]bool) []string {
	var out []string
	for _, imp := range p.Imports {
		q, ok := pkgs[imp]
		if !ok || q.Standard || within(q.Dir, dir) {
			continue
		}
		pat, _, listed := match(imp, r.Imports)
		if !listed {
			out = append(out, fmt.Sprintf("%s: imports %s, which Imports does not list", p.ImportPath, imp))
			continue
		}
		used[pat] = true
	}
	return out
}

// badDeps reports each forbidden package p reaches, with the chain of imports
// that reaches it (the shortest, breadth first).
func (r Rules) badDeps(p *pkg, pkgs map[string]*pkg) []string {
	var out []string
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
			if _, why, bad := match(imp, r.BadDeps); bad {
				chain := []string{imp}
				for c := cur; c != ""; c = via[c] {
					chain = append(chain, c)
				}
				slices.Reverse(chain)
				out = append(out, fmt.Sprintf("%s: depends on %s (%s): %s",
					p.ImportPath, imp, strings.Join(chain, " -> "), why))
				continue // its own dependencies are its problem
			}
			queue = append(queue, imp)
		}
	}
	return out
}

// nonStandard reports each package outside the standard library and outside
// dir that p imports, directly, but for r.Leaves, which must reach nothing
// but the standard library and their own packages.
func (r Rules) nonStandard(p *pkg, pkgs map[string]*pkg, dir string) []string {
	var out []string
	for _, imp := range p.Imports {
		q, ok := pkgs[imp]
		if !ok || q.Standard || within(q.Dir, dir) {
			continue
		}
		if _, _, leaf := match(imp, r.Leaves); !leaf {
			out = append(out, fmt.Sprintf("%s: imports %s, outside the standard library: %s", p.ImportPath, imp, r.StdlibOnly))
			continue
		}
		if dep := beyondStdlib(q, pkgs); dep != "" {
			out = append(out, fmt.Sprintf("%s: imports the leaf %s, which depends on %s, outside the standard library: %s",
				p.ImportPath, imp, dep, r.StdlibOnly))
		}
	}
	return out
}

// nonLeaves reports each package outside the standard library and outside
// dir that p imports directly and that imports a package outside the
// standard library itself.
func nonLeaves(p *pkg, pkgs map[string]*pkg, dir, why string) []string {
	var out []string
	for _, imp := range p.Imports {
		q, ok := pkgs[imp]
		if !ok || q.Standard || within(q.Dir, dir) {
			continue
		}
		for _, qi := range q.Imports {
			if r, ok := pkgs[qi]; ok && !r.Standard {
				out = append(out, fmt.Sprintf("%s: imports %s, which is not a leaf (it imports %s): %s", p.ImportPath, imp, qi, why))
				break
			}
		}
	}
	return out
}

// beyondStdlib returns a package leaf depends on that is neither in the
// standard library nor under leaf's own directory; "" if there is none.
func beyondStdlib(leaf *pkg, pkgs map[string]*pkg) string {
	seen := map[string]bool{leaf.ImportPath: true}
	queue := []*pkg{leaf}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, imp := range cur.Imports {
			q, ok := pkgs[imp]
			if !ok || seen[imp] || q.Standard {
				continue
			}
			if !within(q.Dir, leaf.Dir) {
				return imp
			}
			seen[imp] = true
			queue = append(queue, q)
		}
	}
	return ""
}
