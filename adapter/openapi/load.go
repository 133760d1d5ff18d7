package openapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"mcpx.dev/mcpx/internal/atomicfile"
)

// maxSpecBytes bounds a document read from a file or URL.
const maxSpecBytes = 32 << 20

// loaded is one version of the document and what it compiled to.
type loaded struct {
	data []byte
	etag string    // a URL's ETag, "" if none
	mod  time.Time // a file's modification time
	size int64     // a file's size
	api  *api
}

// load returns the compiled document: the cached one while it is current,
// else the document read and compiled again.
func (o *opener) load(ctx context.Context) (*api, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var next *loaded
	var err error
	switch {
	case isURL(o.cfg.Spec):
		next, err = o.fetch(ctx)
	case strings.HasPrefix(o.cfg.Spec, nixPrefix):
		if o.cfg.Resolve == nil {
			err = errors.New("this daemon has no nix resolver; give a file or an http(s) URL")
		} else if o.path, err = o.cfg.Resolve(ctx, o.cfg.Spec); err == nil {
			next, err = o.readFile()
		}
	default:
		next, err = o.readFile()
	}
	if err != nil {
		return nil, fmt.Errorf("server %s: spec %s: %w", o.cfg.Server, o.cfg.Spec, err)
	}
	if next.api == nil {
		next.api, err = o.compile(ctx, next.data)
		if err != nil {
			return nil, fmt.Errorf("server %s: spec %s: %w", o.cfg.Server, o.cfg.Spec, err)
		}
	}
	o.cache = next
	return next.api, nil
}

// nixPrefix starts a nix: spec, whose output is the document
// (Config.Resolve).
const nixPrefix = "nix:"

// file is the spec's file: a nix: spec's resolved output, else the spec.
func (o *opener) file() string {
	if o.path != "" {
		return o.path
	}
	return o.cfg.Spec
}

// readFile reads the spec file unless the cached copy has its size and
// modification time.
func (o *opener) readFile() (*loaded, error) {
	fi, err := os.Stat(o.file())
	if err != nil {
		return nil, err
	}
	if c := o.cache; c != nil && c.mod.Equal(fi.ModTime()) && c.size == fi.Size() {
		return c, nil
	}
	data, err := readAll(os.Open(o.file()))
	if err != nil {
		return nil, err
	}
	return &loaded{data: data, mod: fi.ModTime(), size: fi.Size()}, nil
}

func readAll(f *os.File, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f)
}

func readLimited(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxSpecBytes+1))
	if err == nil && len(data) > maxSpecBytes {
		err = fmt.Errorf("the document is larger than %d MiB", maxSpecBytes>>20)
	}
	return data, err
}

// specFromService reports whether the spec URL is on the origin of the
// configured baseUrl, so that the configured headers may go with its
// fetch; never to another origin, nor before the owner said which the
// service's is.
func (o *opener) specFromService() bool {
	if o.cfg.BaseURL == "" {
		return false
	}
	s, err1 := url.Parse(o.cfg.Spec)
	b, err2 := url.Parse(o.cfg.BaseURL)
	return err1 == nil && err2 == nil && s.Scheme == b.Scheme && s.Host == b.Host
}

// diskCopy is a URL spec as CacheDir keeps it.
type diskCopy struct {
	URL  string `json:"url"`
	ETag string `json:"etag"`
	Data []byte `json:"data"`
}

// fetch GETs the spec URL, with the cached copy's ETag; a 304 keeps the
// cached copy, and so does an unreachable URL or a 5xx answer.
func (o *opener) fetch(ctx context.Context) (*loaded, error) {
	cached := o.cache
	if cached == nil {
		cached = o.readDisk()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.cfg.Spec, nil)
	if err != nil {
		return nil, err
	}
	if o.specFromService() {
		// A service that serves its own document may want its
		// credentials for it too (mcpx's /openapi.json does).
		h, err := o.headers()
		if err != nil {
			return nil, err
		}
		for k, v := range h {
			req.Header[k] = v
		}
	}
	req.Header.Set("Accept", "application/json, application/yaml;q=0.9, */*;q=0.5")
	if cached != nil && cached.etag != "" {
		req.Header.Set("If-None-Match", cached.etag)
	}
	resp, err := o.cfg.HTTPClient.Do(req)
	if err != nil {
		if cached != nil && ctx.Err() == nil {
			return cached, nil
		}
		return nil, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified && cached != nil:
		return cached, nil
	case resp.StatusCode >= 500 && cached != nil:
		return cached, nil
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET answered %s", resp.Status)
	}
	data, err := readLimited(resp.Body)
	if err != nil {
		if cached != nil && ctx.Err() == nil {
			return cached, nil
		}
		return nil, err
	}
	next := &loaded{data: data, etag: resp.Header.Get("ETag")}
	if cached != nil && cached.api != nil && string(cached.data) == string(data) {
		next.api = cached.api
	}
	o.writeDisk(next)
	return next, nil
}

func (o *opener) diskPath() string {
	sum := sha256.Sum256([]byte(o.cfg.Spec))
	return filepath.Join(o.cfg.CacheDir, "openapi-"+hex.EncodeToString(sum[:12])+".json")
}

// readDisk is CacheDir's copy of the spec URL, nil if none.
func (o *opener) readDisk() *loaded {
	if o.cfg.CacheDir == "" {
		return nil
	}
	b, err := os.ReadFile(o.diskPath())
	if err != nil {
		return nil
	}
	var c diskCopy
	if json.Unmarshal(b, &c) != nil || c.URL != o.cfg.Spec {
		return nil
	}
	return &loaded{data: c.Data, etag: c.ETag}
}

// writeDisk keeps l in CacheDir; a failure only costs the fallback.
func (o *opener) writeDisk(l *loaded) {
	if o.cfg.CacheDir == "" || l.etag == "" {
		return
	}
	b, err := json.Marshal(diskCopy{URL: o.cfg.Spec, ETag: l.etag, Data: l.data})
	if err != nil {
		return
	}
	if os.MkdirAll(o.cfg.CacheDir, 0o700) == nil {
		_ = atomicfile.Write(o.diskPath(), b, 0o600)
	}
}

// parse reads data as an OpenAPI document at the spec's location, its
// external references read from files beside a file spec or by URL beside
// a URL spec (never a file from a URL spec).
func (o *opener) parse(ctx context.Context, data []byte) (*openapi3.T, *url.URL, error) {
	loc, err := o.location()
	if err != nil {
		return nil, nil, err
	}
	loader := openapi3.NewLoader()
	loader.Context = ctx
	loader.IsExternalRefsAllowed = true
	loader.ReadFromURIFunc = func(_ *openapi3.Loader, u *url.URL) ([]byte, error) {
		return o.readRef(ctx, loc, u)
	}
	doc, err := loader.LoadFromDataWithPath(data, loc)
	if err != nil {
		return nil, nil, err
	}
	if doc.OpenAPI == "" {
		return nil, nil, errors.New(`not an OpenAPI 3 document (no "openapi" version field); a Swagger 2.0 document must be converted first`)
	}
	doc.InternalizeRefs(ctx, nil)
	return doc, loc, nil
}

func (o *opener) location() (*url.URL, error) {
	if isURL(o.cfg.Spec) {
		return url.Parse(o.cfg.Spec)
	}
	abs, err := filepath.Abs(o.file())
	if err != nil {
		return nil, err
	}
	return &url.URL{Path: filepath.ToSlash(abs)}, nil
}

// readRef reads an external $ref's document.
func (o *opener) readRef(ctx context.Context, root, u *url.URL) ([]byte, error) {
	remote := u.Scheme == "http" || u.Scheme == "https"
	switch {
	case root.Scheme != "" && !remote:
		return nil, fmt.Errorf("a document fetched by URL may not reference the file %s", u)
	case remote:
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, err
		}
		resp, err := o.cfg.HTTPClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s answered %s", u.Redacted(), resp.Status)
		}
		return readLimited(resp.Body)
	default:
		return readAll(os.Open(filepath.FromSlash(u.Path)))
	}
}
