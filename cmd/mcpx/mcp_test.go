package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBridgeOptions: against a broker on another machine `mcpx mcp` sends
// the cwd mapped to the broker's side and maps the client's roots; an
// unmapped cwd is not sent (with a warning) rather than failing the
// process a client started; a local broker gets the cwd as it is.
func TestBridgeOptions(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	src := filepath.Join(dir, "src")
	os.MkdirAll(filepath.Join(src, "app"), 0o755)
	cfgFile := filepath.Join(dir, "client.json")
	os.WriteFile(cfgFile, []byte(`{"pathMappings": {"`+src+`": "/home/me/src"}}`), 0o600)
	for _, tc := range []struct {
		broker, cwd, wantCwd string
		mapped               bool
	}{
		{"https://sandbox.example.ts.net", filepath.Join(src, "app"), "/home/me/src/app", true},
		{"https://sandbox.example.ts.net", dir, "", true},
		{filepath.Join(dir, "mcpx.sock"), filepath.Join(src, "app"), filepath.Join(src, "app"), false},
	} {
		var stderr strings.Builder
		env := map[string]string{"MCPX_CLIENT_CONFIG": cfgFile, "HOME": dir, "MCPX_BROKER": tc.broker, "MCPX_TOKEN": "t"}
		c := &cli{stderr: &stderr, getenv: func(k string) string { return env[k] }}
		t.Chdir(tc.cwd)
		opts, err := bridgeOptions(t.Context(), c, new(brokerOpts), true, new(callerOpts))
		if err != nil {
			t.Errorf("%s from %s: %v", tc.broker, tc.cwd, err)
			continue
		}
		if got := opts.Header.Get("Mcpx-Cwd"); got != tc.wantCwd {
			t.Errorf("%s from %s: Mcpx-Cwd %q, want %q", tc.broker, tc.cwd, got, tc.wantCwd)
		}
		if tc.wantCwd == "" && !strings.Contains(stderr.String(), "not sending the working directory") {
			t.Errorf("no warning for an unmapped cwd: %q", stderr.String())
		}
		if (opts.MapPath != nil) != tc.mapped {
			t.Errorf("%s: roots mapped %v, want %v", tc.broker, opts.MapPath != nil, tc.mapped)
		}
		if opts.MapPath != nil {
			if got, ok := opts.MapPath(filepath.Join(src, "app")); !ok || got != "/home/me/src/app" {
				t.Errorf("MapPath = %q, %v", got, ok)
			}
		}
	}
}
