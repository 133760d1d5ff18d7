package nixresolve

import (
	"path/filepath"
	"strings"

	"mcpx.dev/mcpx/nixresolve/nixspec"
)

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
