package atomicfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/atomicfile"
)

// TestWrite: the content and mode land whole, an existing file is replaced,
// and a failed write leaves the old file and no temporary file behind.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := atomicfile.Write(path, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(path, []byte("two"), 0o640); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if err != nil || string(b) != "two" || fi.Mode().Perm() != 0o640 {
		t.Fatalf("file %q %v (%v), want \"two\" 0640", b, fi.Mode(), err)
	}
	// A directory in the way of the rename: the write fails, naming the
	// path, and nothing else is left in dir.
	blocked := filepath.Join(dir, "blocked")
	if err := os.MkdirAll(filepath.Join(blocked, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(blocked, []byte("x"), 0o600); err == nil || !strings.Contains(err.Error(), blocked) {
		t.Errorf("writing over a non-empty directory: %v, want an error naming it", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("dir holds %d entries, want the file and the directory only", len(entries))
	}
	if err := atomicfile.Write(filepath.Join(dir, "missing", "f"), nil, 0o600); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

// TestReadJSON: no file is not found and no error; a file that is not
// JSON is found with an error; one Write left is read back.
func TestReadJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	var v map[string]int
	if found, err := atomicfile.ReadJSON(path, &v); found || err != nil {
		t.Errorf("no file: %v, %v", found, err)
	}
	if err := atomicfile.Write(path, []byte("nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	if found, err := atomicfile.ReadJSON(path, &v); !found || err == nil {
		t.Errorf("not JSON: %v, %v", found, err)
	}
	if err := atomicfile.Write(path, []byte(`{"a":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if found, err := atomicfile.ReadJSON(path, &v); !found || err != nil || v["a"] != 1 {
		t.Errorf("JSON: %v, %v, %v", found, err, v)
	}
}
