package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"mcpx.dev/mcpx/client"
)

// TestBrokerToken: an http broker gets the token of --token-file, else of
// $MCPX_TOKEN, as a bearer token.
func TestBrokerToken(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"type":"https://mcpx.dev/problems/unauthorized","title":"Unauthorized","status":401,"detail":"no"}`))
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "token")
	os.WriteFile(file, []byte("from-file\n"), 0o600)
	t.Setenv("MCPX_TOKEN", "from-env")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for _, args := range [][]string{{"status", "--broker", srv.URL, "--token-file", file}, {"status", "--broker", srv.URL}} {
		var out, errOut strings.Builder
		if code := run(t.Context(), args, strings.NewReader(""), &out, &errOut); code == exitOK {
			t.Errorf("%v succeeded against a broker that refuses everyone", args)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 2 || got[0] != "Bearer from-file" || got[len(got)-1] != "Bearer from-env" {
		t.Errorf("Authorization headers %q, want the file's token, then the environment's", got)
	}
}

// TestRemoteCwd: against a remote broker, --cwd is a path there (absolute,
// used as given); else the local cwd goes through the client config's
// mappings, and an unmapped one is an error naming --cwd and the config.
func TestRemoteCwd(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	src := filepath.Join(dir, "src")
	os.MkdirAll(filepath.Join(src, "app"), 0o755)
	cfgFile := filepath.Join(dir, "client.json")
	os.WriteFile(cfgFile, []byte(`{"pathMappings": {"`+src+`": "/home/me/src"}}`), 0o600)
	c := &cli{getenv: func(k string) string {
		return map[string]string{"MCPX_CLIENT_CONFIG": cfgFile, "HOME": dir}[k]
	}}
	if got, err := remoteCwd(c, "", filepath.Join(src, "app")); err != nil || got != "/home/me/src/app" {
		t.Errorf("mapped cwd = %q, %v; want /home/me/src/app", got, err)
	}
	if got, err := remoteCwd(c, "/srv/x/../y", filepath.Join(src, "app")); err != nil || got != "/srv/y" {
		t.Errorf("--cwd = %q, %v; want /srv/y as given (cleaned)", got, err)
	}
	if _, err := remoteCwd(c, "rel", src); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("a relative --cwd: %v, want an error asking for an absolute path", err)
	}
	_, err := remoteCwd(c, "", dir)
	var ue *client.UnmappedError
	if !errors.As(err, &ue) || ue.Dir != dir || !strings.Contains(err.Error(), "--cwd") || !strings.Contains(err.Error(), cfgFile) {
		t.Errorf("unmapped cwd: %v, want an UnmappedError for %s suggesting --cwd and %s", err, dir, cfgFile)
	}
}

// TestTsnetNeedsTailnetBroker: --tsnet with a socket path is a usage
// mistake, said before any node is started.
func TestTsnetNeedsTailnetBroker(t *testing.T) {
	var out, errOut strings.Builder
	code := run(t.Context(), []string{"status", "--tsnet", "--broker", "/tmp/x.sock"}, strings.NewReader(""), &out, &errOut)
	if code == exitOK || !strings.Contains(errOut.String(), "--tsnet reaches a broker on the tailnet") {
		t.Errorf("exit %d: %s; want an error saying --tsnet needs a tailnet broker", code, errOut.String())
	}
}
