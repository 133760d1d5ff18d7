package client_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/client"
)

func TestBrokerAddr(t *testing.T) {
	for _, tc := range []struct {
		in, addr string
		tailnet  bool
	}{
		{"sandbox", "http://sandbox", true},
		{"sandbox.tail-scale.ts.net", "http://sandbox.tail-scale.ts.net", true},
		{"sandbox:8080", "http://sandbox:8080", true},
		{"/run/user/1/mcpx/mcpx.sock", "/run/user/1/mcpx/mcpx.sock", false},
		{"./mcpx.sock", "./mcpx.sock", false},
		{"mcpx.sock", "mcpx.sock", false},
		{"unix:///tmp/s", "unix:///tmp/s", false},
		{"http://127.0.0.1:9", "http://127.0.0.1:9", false},
		{"https://sandbox.tail-scale.ts.net", "https://sandbox.tail-scale.ts.net", false},
		{"-bad-", "-bad-", false},
	} {
		addr, tailnet := client.BrokerAddr(tc.in)
		if addr != tc.addr || tailnet != tc.tailnet {
			t.Errorf("BrokerAddr(%q) = %q, %v; want %q, %v", tc.in, addr, tailnet, tc.addr, tc.tailnet)
		}
	}
}

func TestRemote(t *testing.T) {
	for addr, want := range map[string]bool{
		"/tmp/mcpx.sock":         false,
		"http://127.0.0.1:4000":  false,
		"http://[::1]:4000":      false,
		"http://localhost:4000":  false,
		"http://sandbox":         true,
		"https://100.64.0.1":     true,
		"http://sandbox.ts.net/": true,
	} {
		if got := client.New(addr, client.Options{}).Remote(); got != want {
			t.Errorf("New(%q).Remote() = %v, want %v", addr, got, want)
		}
	}
}

// TestPathMap: the longest mapped prefix wins, on whole path elements; the
// local side and the mapped directory are canonicalised (a symlink into a
// mapped tree maps; ".." is collapsed); an unmapped directory is not
// mapped.
func TestPathMap(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(base, "src")
	deep := filepath.Join(src, "work", "app")
	for _, d := range []string{deep, filepath.Join(base, "srcx")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(deep, link); err != nil {
		t.Fatal(err)
	}
	m, err := client.NewPathMap(map[string]string{
		src:                        "/home/me/src",
		filepath.Join(src, "work"): "/srv/work/",
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{
		src:                                  "/home/me/src",
		filepath.Join(src, "other"):          "/home/me/src/other",
		deep:                                 "/srv/work/app",
		link:                                 "/srv/work/app",
		filepath.Join(deep, "..", "..", "x"): "/home/me/src/x",
	} {
		if got, ok := m.Map(dir); !ok || got != want {
			t.Errorf("Map(%s) = %q, %v; want %q", dir, got, ok, want)
		}
	}
	for _, dir := range []string{base, filepath.Join(base, "srcx"), filepath.Join(src, "..")} {
		if got, ok := m.Map(dir); ok {
			t.Errorf("Map(%s) = %q, want unmapped", dir, got)
		}
	}
	for _, bad := range []map[string]string{{"rel": "/x"}, {src: "rel"}} {
		if _, err := client.NewPathMap(bad); err == nil {
			t.Errorf("NewPathMap(%v) accepted a relative path", bad)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	cfg, err := client.LoadConfig(filepath.Join(dir, "absent.json"))
	if err != nil || len(cfg.PathMappings) != 0 {
		t.Fatalf("absent config = %+v, %v; want empty", cfg, err)
	}
	good := filepath.Join(dir, "client.json")
	os.WriteFile(good, []byte(`{"pathMappings": {"/Users/me/src": "/home/me/src"}}`), 0o600)
	if cfg, err = client.LoadConfig(good); err != nil || cfg.PathMappings["/Users/me/src"] != "/home/me/src" {
		t.Errorf("LoadConfig = %+v, %v", cfg, err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"pathMapping": {}}`), 0o600)
	if _, err := client.LoadConfig(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "pathMapping") {
		t.Errorf("a misspelt field: %v, want an error naming the file and the field", err)
	}
	var unmapped error = &client.UnmappedError{Dir: "/Users/me/x", Config: good}
	var ue *client.UnmappedError
	if !errors.As(unmapped, &ue) || !strings.Contains(unmapped.Error(), "--cwd") || !strings.Contains(unmapped.Error(), good) {
		t.Errorf("UnmappedError %q does not suggest --cwd and the config file", unmapped)
	}
}
