package confine

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// interpreters are the programs whose first file argument is the program
// that really runs: its package (node's family) or its directory (the
// others) is read too.
var interpreters = map[string]bool{
	"node": true, "nodejs": true, "bun": true, "deno": true, "tsx": true,
	"python": true, "python3": true, "ruby": true, "perl": true, "php": true,
	"sh": true, "bash": true, "dash": true, "zsh": true,
}

// nodeFamily are the interpreters of npm packages.
var nodeFamily = map[string]bool{"node": true, "nodejs": true, "bun": true, "deno": true, "tsx": true}

// ProgramReads are the paths a program needs to read to run: its
// executable (found on the daemon's PATH already: exe is absolute) and
// where its own files are, with symbolic links followed, since the
// kernel checks where they lead:
//
//   - a file under a node_modules directory (an npm package's bin, or a
//     node entry point within one): the directory that holds the
//     outermost node_modules, which is the package and every dependency
//     npm installed with it (for `mcpx registry add`'s packages, their
//     directory in the state directory, and nothing else of it);
//   - a node, bun or deno entry point outside node_modules: its package,
//     the nearest directory above it with a package.json (its own
//     node_modules included), never the home directory or /; without
//     one, the entry point's directory;
//   - an interpreter's program file (python, ruby, a shell script): its
//     directory;
//   - any other executable: its directory.
//
// A directory that holds others' files too is never read for a program
// in it, only the program's file: /, the home directory, and the
// temporary directories ($TMPDIR, /tmp, /var/tmp, /dev/shm), where the
// daemon's other instances keep their private directories.
//
// dir is the child's working directory, for a relative program file.
func ProgramReads(exe string, args []string, dir string) []string {
	var out []string
	add := func(p string) {
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	base := filepath.Base(exe)
	for _, e := range paths(exe) {
		add(e)
		add(home(e, false))
	}
	if !interpreter(base) {
		return out
	}
	script := firstFile(args, dir)
	if script == "" {
		return out
	}
	for _, s := range paths(script) {
		add(s)
		add(home(s, nodeFamily[strings.TrimSuffix(base, filepath.Ext(base))]))
	}
	return out
}

// interpreter reports whether base (python3.12 too) names an interpreter.
func interpreter(base string) bool {
	if interpreters[base] {
		return true
	}
	for name := range interpreters {
		if rest, ok := strings.CutPrefix(base, name); ok && strings.Trim(rest, "0123456789.") == "" {
			return true
		}
	}
	return false
}

// shared returns whether a directory holds others' files too: /, the
// home directory, a temporary directory.
func shared() func(dir string) bool {
	userHome, _ := os.UserHomeDir()
	wide := []string{"/", ".", "/tmp", "/var/tmp", "/dev/shm", filepath.Clean(os.TempDir())}
	if userHome != "" {
		wide = append(wide, filepath.Clean(userHome))
	}
	return func(d string) bool { return slices.Contains(wide, d) }
}

// paths are p and, if it is a symbolic link, where it leads.
func paths(p string) []string {
	p = filepath.Clean(p)
	out := []string{p}
	if real, err := filepath.EvalSymlinks(p); err == nil && real != p {
		out = append(out, real)
	}
	return out
}

// firstFile is the first of args (after argv[0]) that is an existing
// regular file, absolute, or relative to dir; "" if none. Flags are
// skipped (node --inspect x.js).
func firstFile(args []string, dir string) string {
	for i, a := range args {
		if i == 0 || a == "" || strings.HasPrefix(a, "-") {
			continue
		}
		if !filepath.IsAbs(a) {
			if dir == "" {
				continue
			}
			a = filepath.Join(dir, a)
		}
		if fi, err := os.Stat(a); err == nil && fi.Mode().IsRegular() {
			return filepath.Clean(a)
		}
	}
	return ""
}

// home is where file's own files are: the directory above its outermost
// node_modules, else (for a node entry point, pkg) its package's
// directory, else its own directory.
// It is never a shared directory (shared): the file alone, then.
func home(file string, pkg bool) string {
	wide := shared()
	if i := strings.Index(file, "/node_modules/"); i > 0 {
		if d := file[:i]; !wide(d) {
			return d
		}
		return file[:i] + "/node_modules"
	}
	dir := filepath.Dir(file)
	if wide(dir) {
		return file
	}
	if !pkg {
		return dir
	}
	for d := dir; !wide(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "package.json")); err == nil {
			return d
		}
	}
	return dir
}
