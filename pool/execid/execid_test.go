package execid_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/pool/execid"
)

const script = "#!/bin/sh\nexec \"$(dirname \"$0\")/helper\" \"$@\"\n"

// write creates an executable file at dir/name with content.
func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// repoint makes link point at target, replacing it as `ln -sfn` does.
func repoint(t *testing.T, target, link string) {
	t.Helper()
	tmp := link + ".tmp"
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
}

func of(t *testing.T, command, path string) execid.ID {
	t.Helper()
	id := execid.Of(command, execid.Options{Path: path})
	if id.Missing() {
		t.Fatalf("%s on PATH %s: %s", command, path, id.Value)
	}
	if !strings.HasPrefix(id.Value, "sha256:") || len(id.Value) != len("sha256:")+16 {
		t.Fatalf("%s: identity %q is not sha256:<16 hex>", command, id.Value)
	}
	return id
}

func TestScriptCopiesInTwoDirectoriesDiffer(t *testing.T) {
	d := t.TempDir()
	a := write(t, filepath.Join(d, "a"), "srv", script)
	b := write(t, filepath.Join(d, "b"), "srv", script)
	ia, ib := of(t, a, ""), of(t, b, "")
	if ia.Value == ib.Value {
		t.Errorf("identical scripts in %s and %s share the identity %s; a script's directory is part of it", a, b, ia.Value)
	}
}

func TestRepointWithinOneDirectoryKeepsIdentity(t *testing.T) {
	d := t.TempDir()
	write(t, filepath.Join(d, "a"), "srv-1", script)
	write(t, filepath.Join(d, "a"), "srv-2", script)
	bin := filepath.Join(d, "bin")
	os.Mkdir(bin, 0o755)
	link := filepath.Join(bin, "srv")
	repoint(t, filepath.Join(d, "a", "srv-1"), link)
	before := of(t, "srv", bin) // looked up through PATH
	if before.Path != link || before.Real != filepath.Join(d, "a", "srv-1") {
		t.Fatalf("resolved %s -> %s; want %s -> a/srv-1", before.Path, before.Real, link)
	}
	repoint(t, filepath.Join(d, "a", "srv-2"), link)
	if st := execid.StatOf(before); st.Equal(before.Stat) {
		t.Errorf("the stat of the chain did not move when the symlink was re-pointed")
	}
	after := of(t, "srv", bin)
	if after.Value != before.Value {
		t.Errorf("re-pointing at an identical script in the same directory changed the identity: %s -> %s", before.Value, after.Value)
	}
	// And re-pointing it at a copy in another directory changes it.
	write(t, filepath.Join(d, "b"), "srv-1", script)
	repoint(t, filepath.Join(d, "b", "srv-1"), link)
	if other := of(t, "srv", bin); other.Value == before.Value {
		t.Errorf("re-pointing at an identical script in another directory kept the identity %s", other.Value)
	}
}

func TestNonScriptCopiesShareIdentity(t *testing.T) {
	d := t.TempDir()
	content := "\x7fELF not really, but not a script either\n"
	a := write(t, filepath.Join(d, "a"), "srv", content)
	b := write(t, filepath.Join(d, "b"), "other-name", content)
	ia, ib := of(t, a, ""), of(t, b, "")
	if ia.Value != ib.Value {
		t.Errorf("identical non-script files differ: %s vs %s", ia.Value, ib.Value)
	}
	c := write(t, filepath.Join(d, "c"), "srv", content+"x")
	if ic := of(t, c, ""); ic.Value == ia.Value {
		t.Errorf("different content shares the identity %s", ic.Value)
	}
}

func TestLargeFileUsesStatIdentity(t *testing.T) {
	d := t.TempDir()
	big := strings.Repeat("x", 2<<20)
	a := write(t, filepath.Join(d, "a"), "srv", big)
	b := write(t, filepath.Join(d, "b"), "srv", big)
	ia, ib := of(t, a, ""), of(t, b, "")
	// Content identity would make them equal; stat identity tells the
	// two inodes apart.
	if ia.Value == ib.Value {
		t.Errorf("two > 1 MiB files with the same content share %s; want stat identity (device, inode, ...)", ia.Value)
	}
	// The same file under a smaller limit is stat-identified too, and a
	// touch (new mtime) changes that identity, while its content is the same.
	small := write(t, filepath.Join(d, "s"), "srv", "tiny\n")
	is := execid.Of(small, execid.Options{HashMax: 2})
	fi, _ := os.Stat(small)
	if err := os.Chtimes(small, fi.ModTime(), fi.ModTime().Add(1e9)); err != nil {
		t.Fatal(err)
	}
	if again := execid.Of(small, execid.Options{HashMax: 2}); again.Value == is.Value {
		t.Errorf("a stat-identified file's mtime moved and its identity %s did not", is.Value)
	}
	if again := execid.Of(small, execid.Options{}); again.Value == is.Value {
		t.Errorf("content and stat identity of one file agree (%s): their framings must differ", is.Value)
	}
}

func TestMissingCommand(t *testing.T) {
	d := t.TempDir()
	for _, tc := range []struct{ command, path string }{
		{"no-such-mcp-server", d},
		{filepath.Join(d, "absent"), ""},
		{"srv", ""}, // a name with no PATH
	} {
		id := execid.Of(tc.command, execid.Options{Path: tc.path})
		if id.Value != "missing:"+tc.command || !id.Missing() {
			t.Errorf("%q on PATH %q: %q; want missing:%s", tc.command, tc.path, id.Value, tc.command)
		}
	}
	// Not executable is not found, as exec would say.
	p := write(t, d, "plain", "data")
	os.Chmod(p, 0o644)
	if id := execid.Of("plain", execid.Options{Path: d}); !id.Missing() {
		t.Errorf("a non-executable file resolved: %+v", id)
	}
}

func TestPathOrderAndDir(t *testing.T) {
	d := t.TempDir()
	first := write(t, filepath.Join(d, "1"), "srv", "one")
	write(t, filepath.Join(d, "2"), "srv", "two")
	id := of(t, "srv", "relative:"+filepath.Join(d, "1")+string(os.PathListSeparator)+filepath.Join(d, "2"))
	if id.Path != first {
		t.Errorf("found %s; want the first PATH entry's %s", id.Path, first)
	}
	rel := execid.Of("./srv", execid.Options{Dir: filepath.Join(d, "2")})
	if rel.Path != filepath.Join(d, "2", "srv") {
		t.Errorf("./srv in dir 2 resolved to %q", rel.Path)
	}
}

// TestProgramFileJoinsIdentity (real-use 12): the first argument naming an
// existing file is the program an interpreter runs; its content and
// directory join the identity, and a node entry point's package.json and
// lockfile too. Flags and arguments naming no file are passed over.
func TestProgramFileJoinsIdentity(t *testing.T) {
	dir := t.TempDir()
	sh := "/bin/sh"
	srv := write(t, filepath.Join(dir, "a"), "server.sh", "echo one\n")
	write(t, filepath.Join(dir, "b"), "server.sh", "echo one\n")
	idOf := func(args ...string) execid.ID {
		t.Helper()
		id := execid.Of(sh, execid.Options{Args: args, Dir: dir})
		if id.Missing() {
			t.Fatalf("%s: %s", sh, id.Value)
		}
		return id
	}
	bare := idOf()
	if id := idOf("-c", "no such file"); id.Value != bare.Value || id.Entry != "" {
		t.Errorf("arguments naming no file changed the identity: %+v", id)
	}
	one := idOf("-e", srv, "a/server.sh")
	if one.Value == bare.Value || one.Entry != srv || one.Changed(bare) != srv {
		t.Fatalf("the script did not join the identity: %+v", one)
	}
	if rel := idOf("a/server.sh"); rel.Value != one.Value {
		t.Errorf("a relative script (%s) differs from the same absolute one (%s)", rel.Value, one.Value)
	}
	if other := idOf("b/server.sh"); other.Value == one.Value {
		t.Error("the same script in another directory has the same identity")
	}
	st := execid.StatOf(one)
	if !st.Equal(one.Stat) {
		t.Fatal("StatOf moved with nothing changed")
	}
	write(t, filepath.Join(dir, "a"), "server.sh", "echo two\n")
	if execid.StatOf(one).Equal(st) {
		t.Error("StatOf did not move when the script changed")
	}
	if two := idOf(srv); two.Value == one.Value {
		t.Error("a changed script kept its identity")
	}
	os.Remove(srv)
	if gone := idOf(srv); !gone.Lost(one) {
		t.Errorf("a removed script is not lost: %+v", gone)
	}

	// A node entry point: its package.json and lockfile.
	pkg := filepath.Join(dir, "pkg")
	entry := write(t, filepath.Join(pkg, "dist"), "index.js", "console.log(1)\n")
	write(t, pkg, "package.json", `{"version":"1.0.0"}`)
	v1 := idOf(entry)
	write(t, pkg, "package.json", `{"version":"1.0.1"}`)
	v2 := idOf(entry)
	if v2.Value == v1.Value || execid.StatOf(v1).Equal(v1.Stat) {
		t.Error("a changed package.json is not a changed program")
	}
	if p := v2.Changed(v1); p != filepath.Join(pkg, "package.json") {
		t.Errorf("Changed = %s; want the package.json", p)
	}
	write(t, pkg, "package-lock.json", "{}")
	if execid.StatOf(v2).Equal(v2.Stat) || idOf(entry).Value == v2.Value {
		t.Error("a new lockfile is not a changed program")
	}
}
