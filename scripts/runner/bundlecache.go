package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"mcpx.dev/mcpx/internal/atomicfile"
)

// keepBundles is how many bundled snippets the run cache keeps.
const keepBundles = 32

// bundleFiles are what scripts.Bundle writes to a run's directory: the
// bundle, and with the harness its spec and launcher.
var bundleFiles = []string{"script.mjs", "spec.json", "runner.mjs"}

// bundleKey is the name under which s's bundle is kept in the cache, and
// whether it may be: only a snippet (`mcpx exec`) that imports nothing,
// whose bundle then depends on nothing but the key's parts (the client
// module, named by its ETag; the snippet and the harness's options; the
// directory it resolves in and the configuration esbuild reads there; the
// mcpx binary that bundles it). A script file, or anything with an import
// or a require, is bundled every time: its inputs are files.
func bundleKey(s Script, client, dir string) (string, bool) {
	if s.Snippet == "" || s.Sandbox != nil {
		return "", false
	}
	for _, src := range slices.Concat([]string{s.Snippet}, s.Prefix, s.Suffix) {
		if strings.Contains(src, "import") || strings.Contains(src, "require") {
			return "", false
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return "", false
	}
	parts := []any{"mcpx-exec-bundle/1", stamp(exe), client, s.Path, s.Snippet, s.Export, s.Args, s.Prefix, s.Suffix, s.Minimal, s.Lib, dir}
	for d := dir; ; d = filepath.Dir(d) {
		for _, name := range []string{"tsconfig.json", "jsconfig.json", "package.json"} {
			if st := stamp(filepath.Join(d, name)); st != "" {
				parts = append(parts, filepath.Join(d, name), st)
			}
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	b, err := json.Marshal(parts)
	if err != nil {
		return "", false
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16]), true
}

// stamp is a file's size and modification time, or "" when it is not a
// regular file.
func stamp(path string) string {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	return strconv.FormatInt(fi.Size(), 10) + " " + fi.ModTime().UTC().Format(time.RFC3339Nano)
}

// cachedBundle copies the kept bundle key into the run's directory and
// returns the path to run (runner.mjs, or script.mjs for a minimal run),
// or "" when none is kept whole.
func cachedBundle(cache, key, dir string, minimal bool) string {
	kept := filepath.Join(cache, "bundle-"+key)
	files := bundleFiles
	if minimal {
		files = bundleFiles[:1]
	}
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(kept, name))
		if err != nil || os.WriteFile(filepath.Join(dir, name), b, 0o600) != nil {
			return ""
		}
	}
	now := time.Now()
	os.Chtimes(kept, now, now) //nolint:errcheck // only the pruning order
	return filepath.Join(dir, files[len(files)-1])
}

// keepBundle keeps the bundle just written to dir under key, and prunes
// the cache to the keepBundles most recently used. Failing is harmless: the
// next run bundles again.
func keepBundle(cache, key, dir string) {
	kept := filepath.Join(cache, "bundle-"+key)
	if err := os.MkdirAll(kept, 0o700); err != nil {
		return
	}
	for _, name := range bundleFiles {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			atomicfile.Write(filepath.Join(kept, name), b, 0o600) //nolint:errcheck // see above
		}
	}
	ents, _ := os.ReadDir(cache)
	type keptDir struct {
		path string
		mod  time.Time
	}
	var list []keptDir
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.IsDir() && strings.HasPrefix(e.Name(), "bundle-") && validTag(strings.TrimPrefix(e.Name(), "bundle-")) {
			list = append(list, keptDir{filepath.Join(cache, e.Name()), fi.ModTime()})
		}
	}
	slices.SortFunc(list, func(a, b keptDir) int { return b.mod.Compare(a.mod) })
	for _, k := range list[min(len(list), keepBundles):] {
		if k.path != kept {
			os.RemoveAll(k.path)
		}
	}
}
