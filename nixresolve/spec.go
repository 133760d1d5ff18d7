package nixresolve

import (
	"path/filepath"
	"strings"

	"mcpx.dev/mcpx/nixresolve/nixspec"
)

// offlineMayCause reports whether nix.offline may be why ref did not lock
// (nix's stderr says what did fail): not for a flake on this machine
// (path:, git+file:, a path), which needs no network, nor for a flake that
// does not parse.
func offlineMayCause(ref, stderr string) bool {
	if strings.Contains(stderr, "syntax error") {
		return false
	}
	for _, scheme := range []string{"path:", "git+file:", "/", "./", "../"} {
		if strings.HasPrefix(ref, scheme) {
			return false
		}
	}
	return ref != "." && ref != ".."
}

// absolute returns s with a relative path ref made absolute against dir, so
// the cache key and nix see the same flake whatever the daemon's cwd.
func absolute(s nixspec.Spec, dir string) nixspec.Spec {
	for _, scheme := range []string{"", "path:", "git+file:"} {
		rest, ok := strings.CutPrefix(s.Ref, scheme)
		if !ok || !(rest == "." || rest == ".." || strings.HasPrefix(rest, "./") || strings.HasPrefix(rest, "../")) {
			continue
		}
		path, query, _ := strings.Cut(rest, "?")
		abs := filepath.Join(dir, path)
		if query != "" {
			abs += "?" + query
		}
		s.Ref = scheme + abs
		return s
	}
	return s
}

// Absolute returns spec with a relative path ref (nix:.#x, nix:path:./t#x)
// made absolute against dir: the key the resolver caches it by.
func Absolute(spec, dir string) (string, error) {
	s, err := nixspec.Parse(spec)
	if err != nil {
		return "", err
	}
	return absolute(s, dir).String(), nil
}
