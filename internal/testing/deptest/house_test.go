package deptest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The house's rules, for the whole module at once: the rooms (top-level
// directories) docs/architecture.md lists are the ones on disk, they form
// the layers it gives (no import runs back up), no product package imports
// test support, and no product file or function outgrows the limits.

const module = "mcpx.dev/mcpx/"

// testSupport is the room within internal that only tests and benchmarks
// import; it may import anything.
const testSupport = "internal/testing"

// moduleRoot is the directory holding the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(data), "module "+strings.TrimSuffix(module, "/")+"\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod of module mcpx.dev/mcpx above the test's directory")
		}
		dir = parent
	}
}

// room is a layer of docs/architecture.md's rooms table.
type room struct {
	name  string
	layer int
}

// docRooms reads the rooms table of docs/architecture.md: the rows of the
// section "## Rooms" whose first cell is a layer number and second a
// room in backquotes.
func docRooms(t *testing.T, root string) map[string]room {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rooms := map[string]room{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Rooms"
			continue
		}
		if !in || !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 2 {
			continue
		}
		layer, err := strconv.Atoi(strings.TrimSpace(cells[0]))
		name := strings.Trim(strings.TrimSpace(cells[1]), "`/")
		if err != nil || name == "" {
			continue // the header and its rule
		}
		if _, dup := rooms[name]; dup {
			t.Errorf("docs/architecture.md lists room %s twice", name)
		}
		rooms[name] = room{name, layer}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rooms) < 10 {
		t.Fatalf("docs/architecture.md: found %d rooms in its \"## Rooms\" table; the table or this reader is wrong", len(rooms))
	}
	return rooms
}

// TestFolderListIsTheArchitecture: every top-level directory holding Go
// code is a room of the table, and every room of the table is one.
func TestFolderListIsTheArchitecture(t *testing.T) {
	root := moduleRoot(t)
	rooms := docRooms(t, root)
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || e.Name() == "testdata" {
			continue
		}
		if hasGo(filepath.Join(root, e.Name())) {
			onDisk = append(onDisk, e.Name())
		}
	}
	for _, d := range onDisk {
		if _, ok := rooms[d]; !ok {
			t.Errorf("%s/ holds Go code but docs/architecture.md's rooms table does not list it: give it a layer there", d)
		}
	}
	for name := range rooms {
		if !slices.Contains(onDisk, name) {
			t.Errorf("docs/architecture.md lists room %s, which is not a top-level directory of Go code", name)
		}
	}
}

func hasGo(dir string) bool {
	found := false
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || found {
			return fs.SkipAll
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules") {
			return fs.SkipDir
		}
		found = !d.IsDir() && strings.HasSuffix(p, ".go")
		return nil
	})
	return found
}

// TestRoomsFormLayers: an import from one room to another runs down the
// table's layers, never up or sideways; no product package imports test
// support (internal/testing), which stands outside the layers.
func TestRoomsFormLayers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	root := moduleRoot(t)
	rooms := docRooms(t, root)
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var bad []string
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		from := roomOf(p.ImportPath)
		if from == "" {
			continue // test support, or outside the module
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			to := roomOf(imp)
			if to == "" {
				if from != "bench" { // the benchmarks are tests' kin
					bad = append(bad, fmt.Sprintf("%s imports %s: product code never imports test support", p.ImportPath, imp))
				}
				continue
			}
			if to == from {
				continue
			}
			rf, okf := rooms[from]
			rt, okt := rooms[to]
			if !okf || !okt {
				continue // TestFolderListIsTheArchitecture says which room is missing
			}
			if rf.layer >= rt.layer {
				bad = append(bad, fmt.Sprintf("%s (room %s, layer %d) imports %s (room %s, layer %d): an import runs down the layers only",
					p.ImportPath, from, rf.layer, imp, to, rt.layer))
			}
		}
	}
	slices.Sort(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

// roomOf is the room of a module package; "" for test support and for
// packages outside the module.
func roomOf(path string) string {
	rel, ok := strings.CutPrefix(path, module)
	if !ok || rel == testSupport || strings.HasPrefix(rel, testSupport+"/") {
		return ""
	}
	r, _, _ := strings.Cut(rel, "/")
	return r
}

// The limits every product file and function keeps (issue 31): a file a
// reader can hold, a function a reader can see whole.
const (
	maxFileLines = 700
	maxFuncLines = 120
)

// TestHouseLimits: no product file (Go, or the TypeScript and JavaScript
// the binary embeds) over maxFileLines, no Go function over
// maxFuncLines. Tests, test support, testdata and vendored files are not
// product files.
func TestHouseLimits(t *testing.T) {
	root := moduleRoot(t)
	vendored := map[string]bool{"api/dashboard/assets/ui/redoc.standalone.js": true}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && rel != "." || rel == testSupport {
				return fs.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(p)
		if strings.HasSuffix(p, "_test.go") || vendored[filepath.ToSlash(rel)] || (ext != ".go" && ext != ".ts" && ext != ".js") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if n := strings.Count(string(data), "\n"); n > maxFileLines {
			t.Errorf("%s: %d lines; no product file over %d: split it by concept", rel, n, maxFileLines)
		}
		if ext != ".go" {
			return nil
		}
		f, err := parser.ParseFile(fset, p, data, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
				t.Errorf("%s: func %s is %d lines; no function over %d", rel, fd.Name.Name, n, maxFuncLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
