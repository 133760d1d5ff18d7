package nixresolve

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// closures caches each store path's closure: a store path never changes,
// so its closure does not either.
var closures sync.Map // store path -> []string

// Closure returns the store paths storePath needs at run time, itself
// included (nix path-info --recursive, which is nix-store -qR): what a
// confined nix program may read. ctx bounds the nix run; the answer is
// cached for the process's life. The caller must not modify it.
func (r *Resolver) Closure(ctx context.Context, storePath string) ([]string, error) {
	if v, ok := closures.Load(storePath); ok {
		return v.([]string), nil
	}
	if !filepath.IsAbs(storePath) || filepath.Clean(storePath) != storePath {
		return nil, fmt.Errorf("store path %q is not an absolute, clean path", storePath)
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	out, stderr, err := r.run(ctx, "path-info", "--recursive", storePath)
	if err != nil {
		return nil, fmt.Errorf("nix path-info --recursive %s: %v: %s", storePath, err, nixMessage(stderr))
	}
	var paths []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if p := strings.TrimSpace(line); filepath.IsAbs(p) {
			paths = append(paths, p)
		}
	}
	if !slices.Contains(paths, storePath) {
		paths = append(paths, storePath)
	}
	closures.Store(storePath, paths)
	return paths, nil
}
