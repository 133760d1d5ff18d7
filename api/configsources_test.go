package api_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/wire"
)

// TestConfigSourcesRight: the projectConfig right of a token decides whether
// a repository's project file applies to its bearer, GET /v1/config/sources
// says so, and a minter without the right cannot grant it.
func TestConfigSourcesRight(t *testing.T) {
	proctest.CheckNoLeaks(t)
	is, err := auth.Open(auth.Options{Dir: t.TempDir(), Hostname: "box"})
	if err != nil {
		t.Fatal(err)
	}
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "cwd"}`}), Tokens: is})
	root, _ := filepath.EvalSymlinks(t.TempDir())
	proj := filepath.Join(root, ".mcpx", "config.json")
	if err := os.MkdirAll(filepath.Dir(proj), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(proj, []byte(`{"servers": {"local": {"command": "true"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	guest := bearerClient(d, apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "guest", Rule: rights.Rule{Servers: []string{"*"}, Roots: []string{root}, Admin: true}}).Token)
	trusted := bearerClient(d, apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "trusted", Rule: rights.Rule{Servers: []string{"*"}, Roots: []string{root}, ProjectConfig: true}}).Token)

	var w wire.Whoami
	trusted.Do(t, "GET", "/v1/whoami", "").Decode(t, &w)
	if !w.Caller.Rights.ProjectConfig(root) {
		t.Errorf("whoami with a projectConfig token: %+v", w.Caller)
	}
	for _, tc := range []struct {
		who     string
		c       *apitest.Client
		applied bool
		servers string
	}{
		{"guest", guest, false, "demo"},
		{"trusted", trusted, true, "demo,local"},
		{"owner", d.Unix, true, "demo,local"},
	} {
		var src wire.ConfigSources
		tc.c.Do(t, "GET", "/v1/config/sources", "", cwdHeader(root)...).Decode(t, &src)
		var names []string
		for _, s := range src.Servers {
			names = append(names, s.Name)
		}
		if src.ProjectConfig != tc.applied || len(src.Chain) == 0 || src.Chain[0].Config != proj || src.Chain[0].Applied != tc.applied ||
			strings.Join(names, ",") != tc.servers {
			t.Errorf("%s: sources %+v, want the project file applied=%v and servers %s", tc.who, src, tc.applied, tc.servers)
		}
		if !tc.applied && !strings.Contains(src.Chain[0].Skipped, "projectConfig") {
			t.Errorf("%s: the skipped project file does not say why: %+v", tc.who, src.Chain[0])
		}
	}
	// An admin without the right cannot grant it.
	if r := guest.Do(t, "POST", "/v1/tokens", `{"sub":"more","servers":["demo"],"projectConfig":true}`); r.StatusCode != 403 || !strings.Contains(string(r.Bytes), "projectConfig") {
		t.Errorf("minting projectConfig without it: %d %s", r.StatusCode, r.Bytes)
	}
	// A project file that does not load fails that chain with a 400 naming it.
	if err := os.WriteFile(proj, []byte(`{"servers": {"local": {"comand": "true"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if p := trusted.Do(t, "GET", "/v1/tools", "", cwdHeader(root)...).Problem(t); p.Status != 400 || !strings.Contains(p.Detail, proj) {
		t.Errorf("tools with a broken project file: %+v, want a 400 naming %s", p, proj)
	}
}
