// Package dashboard holds the pages mcpx serves to a browser: the dashboard
// at / and the API reference at /docs, with the sign-in page at /login and
// the icon at /favicon.ico. The dashboard is one page of views (#overview:
// traffic charts, servers, instances, pins, "try it", sessions, failures,
// events; #calls: the live call stream; #fleet; #tokens), each action an
// API request asked for first in the page's own dialog.
// They are static files embedded in the binary — plain HTML, CSS and
// JavaScript, no build step, nothing loaded from another origin — that
// read the API with fetch like any other client.
//
//	name, ok := dashboard.Page(r.URL.Path) // "/" -> "index.html"
//	f, err := dashboard.Files().Open(name)
//
// The package serves nothing and decides nothing: package api says who may
// load a page (a browser signed in with a token, docs/trust.md,
// "The dashboard") and sends the headers below with every page.
//
// # The API reference
//
// /docs renders the broker's /openapi.json with Redoc (RedocVersion), the
// standalone bundle vendored as assets/ui/redoc.standalone.js; see
// THIRD_PARTY.md for where it comes from and its licence.
package dashboard

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"strings"
	"sync"
)

//go:embed assets
var assets embed.FS

// RedocVersion is the version of the vendored Redoc standalone bundle.
const RedocVersion = "3.0.1"

// Files returns the pages and their assets: index.html, login.html,
// docs.html at the top, scripts and styles under ui/.
func Files() fs.FS {
	f, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // "assets" is embedded above
	}
	return f
}

// pages maps each page's path to its file.
var pages = map[string]string{
	"/":            "index.html",
	"/docs":        "docs.html",
	"/login":       "login.html",
	"/favicon.ico": "ui/favicon.svg", // what a browser asks for by itself
}

// AssetPrefix is the path under which the pages' scripts and styles are
// served (Files' ui/ directory).
const AssetPrefix = "/ui/"

// ETag returns the entity tag of the file name (a content hash), so that a
// browser revalidates a page or script instead of loading it again: the
// Redoc bundle alone is 2 MB.
func ETag(name string) string {
	if v, ok := etags.Load(name); ok {
		return v.(string)
	}
	b, err := fs.ReadFile(Files(), name)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	tag := `"` + hex.EncodeToString(sum[:12]) + `"`
	etags.Store(name, tag)
	return tag
}

var etags sync.Map // file name -> ETag

// Page returns the file of the page at path, if there is one.
func Page(path string) (string, bool) {
	name, ok := pages[path]
	return name, ok
}

// Asset returns the file of the script or style at path (under
// AssetPrefix), if path names one.
func Asset(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, AssetPrefix)
	if !ok || rest == "" || strings.Contains(rest, "/") {
		return "", false
	}
	name := "ui/" + rest
	if fi, err := fs.Stat(Files(), name); err != nil || fi.IsDir() {
		return "", false
	}
	return name, true
}

// Public reports whether the asset file name (from Asset) may be served
// to a browser that has not signed in: what the sign-in page itself loads.
func Public(name string) bool {
	return name == "ui/login.js" || name == "ui/app.css" || name == "ui/favicon.svg"
}

// Headers are sent with every page and asset. The content security policy
// admits scripts, styles, fonts, images and connections from the broker's
// own origin only (Redoc styles its elements inline, embeds its icon font
// as a data: URL and searches in a blob: worker), no framing, no plugins,
// and no form posts elsewhere. So nothing a page shows leaves the machine.
// Redoc's attribution logo, which it would load from its CDN, is dropped
// by docs.js before the browser tries (the policy would block it too, and
// report it on the console).
var Headers = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
		"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; " +
		"base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
	"X-Content-Type-Options": "nosniff",
	"X-Frame-Options":        "DENY",
	"Referrer-Policy":        "no-referrer",
	"Cache-Control":          "no-cache", // revalidate by ETag each time
}
