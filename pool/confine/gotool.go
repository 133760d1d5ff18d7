package confine

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// goPrograms are the programs that run the go command and read modules:
// gopls loads packages with `go list`.
var goPrograms = map[string]bool{"gopls": true, "go": true}

// GoToolchain is what a confined Go program (gopls, go) needs beyond its
// own files, as the go command would find it from env (the server's own
// variables over base, the daemon's): reads are the Go toolchain's root
// (GOROOT, or where the go command on the PATH lives) and the module
// cache; vars point the child at that cache (GOMODCACHE), since its HOME
// is its private directory, where the default cache would be an empty one
// it cannot fill without the network, and at the daemon's go env file
// (GOENV: GOPRIVATE, GOFLAGS and the like), which it may read. The module
// cache is read-only: a module missing from it stays missing. The build
// and gopls caches are under HOME, the private directory, and writable.
// Nothing for any other program.
func GoToolchain(exe string, env, base []string) (reads, vars []string) {
	if !goPrograms[filepath.Base(exe)] {
		return nil, nil
	}
	look := lookup(env, base)
	file := goEnvFile(look)
	fromFile := readGoEnv(file)
	get := func(k string) string {
		if v := look(k); v != "" {
			return v
		}
		return fromFile[k]
	}
	if root := goRoot(get("GOROOT"), look("PATH")); root != "" {
		reads = append(reads, root)
	}
	cache := get("GOMODCACHE")
	if cache == "" {
		if gopath := filepath.SplitList(get("GOPATH")); len(gopath) > 0 && gopath[0] != "" {
			cache = filepath.Join(gopath[0], "pkg", "mod")
		} else if home := look("HOME"); home != "" {
			cache = filepath.Join(home, "go", "pkg", "mod")
		}
	}
	if filepath.IsAbs(cache) {
		reads = append(reads, cache)
		vars = append(vars, "GOMODCACHE="+cache)
	}
	if file != "" {
		if _, err := os.Stat(file); err == nil {
			reads = append(reads, file)
			vars = append(vars, "GOENV="+file)
		}
	}
	return reads, vars
}

// lookup is a variable of env, else of base; "" if neither has it.
func lookup(env, base []string) func(string) string {
	return func(k string) string {
		for _, set := range [][]string{env, base} {
			for i := len(set) - 1; i >= 0; i-- {
				if v, ok := strings.CutPrefix(set[i], k+"="); ok {
					return v
				}
			}
		}
		return ""
	}
}

// goEnvFile is the go env file the go command reads: $GOENV, else
// os.UserConfigDir's go/env as the daemon's environment says it ("" for
// GOENV=off or when there is no such directory).
func goEnvFile(look func(string) string) string {
	if f := look("GOENV"); f != "" {
		if f == "off" {
			return ""
		}
		return f
	}
	if x := look("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "go", "env")
	}
	if h := look("HOME"); h != "" {
		return filepath.Join(h, ".config", "go", "env")
	}
	return ""
}

// readGoEnv reads a go env file's KEY=VALUE lines; nil if it cannot.
func readGoEnv(file string) map[string]string {
	if file == "" {
		return nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok && k != "" {
			out[k] = v
		}
	}
	return out
}

// goRoot is root when set, else the root of the go command found on path
// (its bin directory's parent, symbolic links followed); "" if none.
func goRoot(root, path string) string {
	if filepath.IsAbs(root) {
		return filepath.Clean(root)
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		real, err := filepath.EvalSymlinks(filepath.Join(dir, "go"))
		if err != nil {
			continue
		}
		if fi, err := os.Stat(real); err == nil && fi.Mode().IsRegular() && filepath.Base(filepath.Dir(real)) == "bin" {
			return filepath.Dir(filepath.Dir(real))
		}
	}
	return ""
}
