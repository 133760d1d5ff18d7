package scripts

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"mcpx.dev/mcpx/config"
)

// Extensions are the file extensions of scripts, in the order a name is
// looked up within one scripts/ directory.
var Extensions = []string{".ts", ".mjs", ".js"}

// Script is a named script found on the chain.
type Script struct {
	// Name is the file's base name without its extension; a recipe's is
	// <server>:<recipe>, for scripts/<server>/<recipe>.ts.
	Name string `json:"name"`
	// Server is a recipe's server; "" for a script of scripts/ itself.
	Server string `json:"server,omitempty"`
	// Path is the script file, absolute.
	Path string `json:"path"`
	// Source is the chain directory whose scripts/ holds it.
	Source string `json:"source"`
	// Shadows are the paths of the farther scripts of the same name it
	// hides, nearest first; empty when it hides none.
	Shadows []string `json:"shadows,omitempty"`
}

// Find lists the named scripts of the chain dirs (nearest first), by name
// (a dir that is a file, an override or fallback entry, is a script named
// by its base name),
// each with the farther scripts of its name it shadows. Unreadable
// directories are skipped: a chain is mostly directories that do not exist.
func Find(dirs []string) []Script {
	byName := map[string]*Script{}
	var names []string
	for _, dir := range dirs {
		files, in := scriptFiles(dir), filepath.Join(dir, "scripts")
		if fi, err := os.Stat(dir); err == nil && fi.Mode().IsRegular() {
			files, in = []string{filepath.Base(dir)}, filepath.Dir(dir) // a script file of its own
		}
		for _, f := range files {
			name := strings.TrimSuffix(f, filepath.Ext(f))
			server, _, recipe := strings.Cut(filepath.ToSlash(name), "/")
			if !recipe {
				server = ""
			}
			name = strings.ReplaceAll(filepath.ToSlash(name), "/", ":")
			path := filepath.Join(in, f)
			if s, ok := byName[name]; ok {
				if s.Path != path {
					s.Shadows = append(s.Shadows, path)
				}
				continue
			}
			byName[name] = &Script{Name: name, Server: server, Path: path, Source: dir}
			names = append(names, name)
		}
	}
	slices.Sort(names)
	out := make([]Script, 0, len(names))
	for _, n := range names {
		out = append(out, *byName[n])
	}
	return out
}

// scriptFiles returns the script files of dir/scripts, one per name (the
// first extension of Extensions wins within a directory), and the recipes
// of each subdirectory named as a server may be (scripts/<server>/<recipe>.ts,
// as "<server>/<recipe>.ts"; deeper directories are none), sorted.
func scriptFiles(dir string) []string {
	in := filepath.Join(dir, "scripts")
	files := filesIn(in, "")
	entries, _ := os.ReadDir(in)
	for _, e := range entries {
		if e.IsDir() && config.IsServerName(e.Name()) {
			files = append(files, filesIn(filepath.Join(in, e.Name()), e.Name()+"/")...)
		}
	}
	slices.Sort(files)
	return files
}

// filesIn returns the script files of the directory in, one per name, each
// prefixed by prefix.
func filesIn(in, prefix string) []string {
	entries, err := os.ReadDir(in)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var files []string
	for _, ext := range Extensions {
		for _, e := range entries {
			n := e.Name()
			name := strings.TrimSuffix(n, ext)
			if e.IsDir() || !strings.HasSuffix(n, ext) || name == "" || strings.HasPrefix(n, ".") || seen[name] {
				continue
			}
			seen[name] = true
			files = append(files, prefix+n)
		}
	}
	return files
}

// Lookup finds the script called name on the chain: the nearest one.
func Lookup(dirs []string, name string) (Script, bool) {
	for _, s := range Find(dirs) {
		if s.Name == name {
			return s, true
		}
	}
	return Script{}, false
}

// Resolve returns the script file arg names, as `mcpx run` takes it: a
// file (a path with a slash, a name with a script extension, or a file of
// cwd with another extension; relative to cwd), else the named script nearest on the chain dirs. The error
// names what was looked for, and the scripts there are.
func Resolve(dirs []string, cwd, arg string) (string, error) {
	isFile := strings.Contains(arg, "/")
	if !isFile {
		for _, ext := range Extensions {
			if strings.HasSuffix(arg, ext) {
				isFile = true
			}
		}
	}
	if !isFile && filepath.Ext(arg) != "" { // hello.sh, here: a file for its interpreter
		fi, err := os.Stat(filepath.Join(cwd, arg))
		isFile = err == nil && !fi.IsDir()
	}
	if isFile {
		p := arg
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		if fi, err := os.Stat(p); err != nil || fi.IsDir() {
			return "", fmt.Errorf("no script file %s", arg)
		}
		return p, nil
	}
	if s, ok := Lookup(dirs, arg); ok {
		return s.Path, nil
	}
	var names []string
	for _, s := range Find(dirs) {
		names = append(names, s.Name)
	}
	if len(names) == 0 {
		return "", fmt.Errorf("no script named %q: no scripts/ directory on the config chain (.config/mcpx or .mcpx from here up, then the user's config directory)", arg)
	}
	return "", fmt.Errorf("no script named %q; the scripts here: %s", arg, strings.Join(names, ", "))
}

// LibDirs returns the lib/ directories of the chain that exist, nearest
// first: where "@lib/<path>" imports are looked up.
func LibDirs(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		lib := filepath.Join(d, "lib")
		if fi, err := os.Stat(lib); err == nil && fi.IsDir() {
			out = append(out, lib)
		}
	}
	return out
}
