// Package jsrtest is a JSR registry on loopback for tests: the packages it
// is given, served as deno fetches them (a package's meta.json, a version's
// <version>_meta.json with the manifest of its files' sizes and sha256
// checksums, and the files), with a count of the fetches of each package's
// meta.json. deno reads the registry's URL from $JSR_URL:
//
//	reg := jsrtest.Start(t, jsrtest.Package{Scope: "mcpxtest", Name: "greet", Version: "1.0.0",
//		Files: map[string]string{"mod.ts": `export const greet = (s: string) => "hi " + s;`}})
//	cmd.Env = append(cmd.Environ(), "JSR_URL="+reg.URL)
//
// Tests that import jsr: packages use it instead of jsr.io, which they must
// not need.
package jsrtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Package is one version of a package: its files (paths relative to the
// package root, without a leading "/") and its exports (export name →
// file, "." the default; nil: "." is mod.ts).
type Package struct {
	Scope, Name, Version string
	Files                map[string]string
	Exports              map[string]string
}

// Registry is a running registry.
type Registry struct {
	URL string // ends in "/", as deno's $JSR_URL does

	mu   sync.Mutex
	hits map[string]int // "@scope/name" → meta.json fetches
}

// Start serves pkgs until the test ends.
func Start(t testing.TB, pkgs ...Package) *Registry {
	t.Helper()
	r := &Registry{hits: map[string]int{}}
	docs := map[string][]byte{}  // path without the leading "/" → body
	metas := map[string]string{} // path of a meta.json → "@scope/name"
	versions := map[string][]string{}
	for _, pk := range pkgs {
		id := "@" + pk.Scope + "/" + pk.Name
		versions[id] = append(versions[id], pk.Version)
		manifest := map[string]any{}
		for p, body := range pk.Files {
			sum := sha256.Sum256([]byte(body))
			manifest["/"+p] = map[string]any{"size": len(body), "checksum": "sha256-" + hex.EncodeToString(sum[:])}
			docs[id+"/"+pk.Version+"/"+p] = []byte(body)
		}
		exports := map[string]string{}
		for k, v := range pk.Exports {
			exports[k] = "./" + strings.TrimPrefix(v, "./")
		}
		if pk.Exports == nil {
			exports["."] = "./mod.ts"
		}
		docs[id+"/"+pk.Version+"_meta.json"] = mustJSON(t, map[string]any{"manifest": manifest, "exports": exports})
	}
	for id, vs := range versions {
		sort.Strings(vs) // the tests' versions compare as strings
		all := map[string]any{}
		for _, v := range vs {
			all[v] = map[string]any{}
		}
		scope, name, _ := strings.Cut(strings.TrimPrefix(id, "@"), "/")
		docs[id+"/meta.json"] = mustJSON(t, map[string]any{"scope": scope, "name": name, "latest": vs[len(vs)-1], "versions": all})
		metas[id+"/meta.json"] = id
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p := strings.TrimPrefix(req.URL.Path, "/")
		b, ok := docs[p]
		if !ok {
			http.NotFound(w, req)
			return
		}
		if id, ok := metas[p]; ok {
			r.mu.Lock()
			r.hits[id]++
			r.mu.Unlock()
		}
		if strings.HasSuffix(p, ".json") {
			w.Header().Set("Content-Type", "application/json")
		} else {
			w.Header().Set("Content-Type", "application/typescript")
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL + "/"
	return r
}

// Fetches is how many times the meta.json of pkg ("@scope/name") was
// fetched: once per deno run that resolved the package without a cache.
func (r *Registry) Fetches(pkg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hits[pkg]
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
