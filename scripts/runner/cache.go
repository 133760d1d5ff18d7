package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/atomicfile"
)

// keepClients is how many generated client modules the run cache keeps.
const keepClients = 8

// clientModule returns the generated client of the caller's servers, kept
// in cache as client-<ETag>.ts (see the package doc).
func clientModule(ctx context.Context, bc *client.Client, caller client.Caller, cache string) (string, error) {
	kept := keptClients(cache)
	var known []string
	for _, k := range kept {
		known = append(known, `"`+k.tag+`"`)
	}
	src, etag, err := bc.TypeScriptClientIfNew(ctx, caller, nil, known)
	if err != nil {
		return "", fmt.Errorf("fetching the generated client: %w", err)
	}
	tag := strings.Trim(strings.TrimPrefix(etag, "W/"), `"`)
	if src == nil { // 304: one of ours
		for _, k := range kept {
			if k.tag == tag {
				now := time.Now()
				os.Chtimes(k.path, now, now) //nolint:errcheck // only the pruning order
				return k.path, nil
			}
		}
		return "", fmt.Errorf("fetching the generated client: the broker answered 304 for %s, which is not in %s", etag, cache)
	}
	if !validTag(tag) { // an older broker: no ETag
		sum := sha256.Sum256(src)
		tag = hex.EncodeToString(sum[:16])
	}
	path := filepath.Join(cache, "client-"+tag+".ts")
	if err := atomicfile.Write(path, src, 0o600); err != nil {
		return "", err
	}
	for _, k := range kept[min(len(kept), keepClients-1):] {
		if k.path != path {
			os.Remove(k.path)
		}
	}
	return path, nil
}

type keptClient struct{ tag, path string }

// keptClients lists the cache's client-<tag>.ts files, most recently used
// first.
func keptClients(cache string) []keptClient {
	ents, _ := os.ReadDir(cache)
	type withTime struct {
		keptClient
		mod time.Time
	}
	var list []withTime
	for _, e := range ents {
		tag, isClient := strings.CutPrefix(e.Name(), "client-")
		tag, isTS := strings.CutSuffix(tag, ".ts")
		if !isClient || !isTS || !validTag(tag) {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			list = append(list, withTime{keptClient{tag, filepath.Join(cache, e.Name())}, fi.ModTime()})
		}
	}
	slices.SortFunc(list, func(a, b withTime) int { return b.mod.Compare(a.mod) })
	out := make([]keptClient, len(list))
	for i, w := range list {
		out[i] = w.keptClient
	}
	return out
}

// validTag reports whether tag is a module's ETag as the broker makes it:
// 32 lower-case hex digits (it names a file, so nothing else is taken).
func validTag(tag string) bool {
	if len(tag) != 32 {
		return false
	}
	for _, c := range tag {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
