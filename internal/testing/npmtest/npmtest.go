// Package npmtest is an npm registry on loopback for tests: the packages it
// is given, served as npm install fetches them (a packument per package, a
// tarball per version), with a count of the fetches of each. Tests that
// install packages use it instead of the public registry, which they must
// not need.
package npmtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Package is one version of a package: its files (package.json is made
// from Name and Version when not among them).
type Package struct {
	Name, Version string
	Files         map[string]string
}

// Registry is a running registry.
type Registry struct {
	URL string // ends in "/", as npm's registry setting does

	mu   sync.Mutex
	hits map[string]int // package name → packument fetches
}

// Start serves pkgs until the test ends.
func Start(t testing.TB, pkgs ...Package) *Registry {
	t.Helper()
	r := &Registry{hits: map[string]int{}}
	tarballs := map[string][]byte{}
	docs := map[string][]byte{}
	// Started once the documents are made: a handler reads them unlocked.
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p, _ := url.PathUnescape(strings.TrimPrefix(req.URL.EscapedPath(), "/"))
		if b, ok := tarballs[p]; ok {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(b)
			return
		}
		if b, ok := docs[p]; ok {
			r.mu.Lock()
			r.hits[p]++
			r.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.Write(b)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":"Not found"}`))
	}))
	t.Cleanup(srv.Close)
	r.URL = "http://" + srv.Listener.Addr().String() + "/"
	versions := map[string]map[string]any{}
	latest := map[string]string{}
	for _, pk := range pkgs {
		tgz := tarball(t, pk)
		base := pk.Name[strings.LastIndex(pk.Name, "/")+1:]
		tp := pk.Name + "/-/" + base + "-" + pk.Version + ".tgz"
		tarballs[tp] = tgz
		s1 := sha1.Sum(tgz)
		s512 := sha512.Sum512(tgz)
		if versions[pk.Name] == nil {
			versions[pk.Name] = map[string]any{}
		}
		versions[pk.Name][pk.Version] = map[string]any{
			"name": pk.Name, "version": pk.Version,
			"dist": map[string]string{"tarball": r.URL + tp, "shasum": hex.EncodeToString(s1[:]),
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:])},
		}
		latest[pk.Name] = pk.Version
	}
	for name, vs := range versions {
		b, err := json.Marshal(map[string]any{"name": name, "dist-tags": map[string]string{"latest": latest[name]}, "versions": vs})
		if err != nil {
			t.Fatal(err)
		}
		docs[name] = b
	}
	srv.Start()
	return r
}

// Fetches is how many times the packument of name was fetched: once per
// npm install that needed the package (npm revalidates it each time).
func (r *Registry) Fetches(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hits[name]
}

func tarball(t testing.TB, pk Package) []byte {
	files := map[string]string{}
	for k, v := range pk.Files {
		files[k] = v
	}
	if _, ok := files["package.json"]; !ok {
		b, _ := json.Marshal(map[string]string{"name": pk.Name, "version": pk.Version, "main": "index.js"})
		files["package.json"] = string(b)
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: "package/" + name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
