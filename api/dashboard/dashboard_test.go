package dashboard_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"mcpx.dev/mcpx/api/dashboard"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestRedocMatchesPin: the vendored Redoc bundle is, byte for byte, the one
// of the @redocly/cli that testdata/npm pins, and of the version
// RedocVersion names.
func TestRedocMatchesPin(t *testing.T) {
	bin := testenv.NPMPackageBinNamed(t, "@redocly/cli", "redocly") // checks the pinned version is installed
	pkg := filepath.Join(testenv.RepoRoot(t), "testdata", "npm", "node_modules", "@redocly", "cli")
	if !strings.HasPrefix(bin, pkg) {
		t.Fatalf("redocly's bin %s is not under %s", bin, pkg)
	}
	pinned, err := os.ReadFile(filepath.Join(pkg, "lib", "chunks", "redoc.standalone.js"))
	if err != nil {
		t.Fatal(err)
	}
	vendored, err := fs.ReadFile(dashboard.Files(), "ui/redoc.standalone.js")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(vendored, pinned) {
		t.Errorf("ui/redoc.standalone.js (%d bytes) differs from @redocly/cli's (%d bytes): copy it again (THIRD_PARTY.md)", len(vendored), len(pinned))
	}
	m := regexp.MustCompile(`Version: (\S+)`).FindSubmatch(vendored[:min(len(vendored), 400)])
	if m == nil || string(m[1]) != dashboard.RedocVersion || !bytes.Contains(vendored[:400], []byte("@license MIT")) {
		t.Errorf("the bundle's header names version %q and licence MIT? want version %s", m, dashboard.RedocVersion)
	}
}

// TestPagesAndAssets: every page and every file its HTML loads is
// embedded and reachable through Page and Asset; paths outside ui/ and
// directories are not assets; only what the sign-in page loads is public.
func TestPagesAndAssets(t *testing.T) {
	ref := regexp.MustCompile(`(?:src|href)="(/[^"]*)"`)
	for _, path := range []string{"/", "/docs", "/login"} {
		name, ok := dashboard.Page(path)
		if !ok {
			t.Fatalf("no page at %s", path)
		}
		html, err := fs.ReadFile(dashboard.Files(), name)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(html, []byte("<script>")) || bytes.Contains(html, []byte("style=")) || bytes.Contains(html, []byte("http")) {
			t.Errorf("%s has an inline script or style, or an absolute URL: the content security policy allows neither", name)
		}
		for _, m := range ref.FindAllSubmatch(html, -1) {
			p := string(m[1])
			if _, isPage := dashboard.Page(p); isPage {
				continue
			}
			asset, ok := dashboard.Asset(p)
			if !ok {
				t.Errorf("%s loads %s, which is not an embedded asset", name, p)
			}
			if path == "/login" && !dashboard.Public(asset) {
				t.Errorf("the sign-in page loads %s, which is not public", p)
			}
		}
	}
	for _, p := range []string{"/ui/", "/ui/../index.html", "/ui/x/y.js", "/index.html", "/ui/nope.js"} {
		if name, ok := dashboard.Asset(p); ok {
			t.Errorf("Asset(%q) = %q, want none", p, name)
		}
	}
	if dashboard.Public("ui/app.js") || dashboard.Public("ui/api.js") {
		t.Error("the dashboard's scripts are public")
	}
}
