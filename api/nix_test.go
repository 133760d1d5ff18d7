package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/nixresolve"
	"mcpx.dev/mcpx/wire"
)

// nixDemoFlake is a flake with no inputs whose package demo wraps this
// test binary as the demo server, marking the child with MCPX_NIX_WRAPPED.
const nixDemoFlake = `{
  outputs = { self }: {
    packages.SYSTEM.demo = derivation {
      name = "mcp-demo-1.0"; system = "SYSTEM"; builder = "/bin/sh";
      script = builtins.readFile ./demo.sh;
      args = [ "-c" ''/bin/mkdir -p $out/bin && printf '%s\n' "$script" > $out/bin/demo && /bin/chmod +x $out/bin/demo'' ];
    } // { meta.mainProgram = "demo"; };
  };
}
`

func writeNixDemo(t *testing.T, nx testenv.NixSetup, dir, tag string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteFiles(t, dir, map[string]string{
		"flake.nix": strings.ReplaceAll(nixDemoFlake, "SYSTEM", nx.System),
		"demo.sh":   "#!/bin/sh\nMCPX_NIX_WRAPPED=" + tag + " " + demo.EnvServer + "=1 exec " + strconv.Quote(self) + " \"$@\"\n",
	})
}

// TestNixRoutes: GET /v1/nix lists a nix: server's spec, lock and store
// path; POST /v1/nix/refresh/{server} after an edit of the flake switches
// the next call to the new store path; POST /v1/nix/gc drops an entry no
// server references, with its GC root.
func TestNixRoutes(t *testing.T) {
	nx := testenv.Nix(t)
	proctest.CheckNoLeaks(t)
	flake, orphanFlake := t.TempDir(), t.TempDir()
	writeNixDemo(t, nx, flake, "v1")
	writeNixDemo(t, nx, orphanFlake, "orphan")
	spec := "nix:path:" + flake + "#demo"
	r, err := nixresolve.New(nixresolve.Options{CacheDir: t.TempDir(), Binary: nx.Bin, Config: nx.Config, Env: nx.Env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	raw, _ := json.Marshal(map[string]any{"servers": map[string]any{"demo": map[string]any{
		"command": spec, "scope": "global",
		"env": map[string]string{proctest.MarkerEnv: proctest.Marker(t)},
	}}})
	cfg, err := config.Parse(raw, "test.json")
	if err != nil {
		t.Fatal(err)
	}
	d := apitest.Start(t, apitest.Options{Config: cfg, Broker: func(o *broker.Options) { o.Nix = r }})
	marker := func() string {
		t.Helper()
		resp := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/env", `{"name":"MCPX_NIX_WRAPPED"}`)
		var res struct {
			Content []struct{ Text string } `json:"content"`
		}
		resp.Decode(t, &res)
		if resp.StatusCode != 200 || len(res.Content) != 1 {
			t.Fatalf("env call: %d %s", resp.StatusCode, resp.Bytes)
		}
		return res.Content[0].Text
	}
	if got := marker(); got != "v1" {
		t.Fatalf("MCPX_NIX_WRAPPED = %q, want v1", got)
	}
	orphan, err := r.Resolve(t.Context(), "nix:path:"+orphanFlake+"#demo")
	if err != nil {
		t.Fatal(err)
	}

	var ls wire.NixList
	d.Unix.Do(t, "GET", "/v1/nix", "").Decode(t, &ls)
	if len(ls.Servers) != 1 || ls.Servers[0].Spec != spec || ls.Servers[0].Pinned || ls.Servers[0].Program == nil ||
		!strings.HasPrefix(ls.Servers[0].Program.StorePath, "/nix/store/") || ls.Servers[0].Program.NarHash == "" {
		t.Fatalf("GET /v1/nix servers: %+v", ls.Servers)
	}
	if len(ls.Unreferenced) != 1 || ls.Unreferenced[0].StorePath != orphan.StorePath {
		t.Errorf("GET /v1/nix unreferenced: %+v, want %s", ls.Unreferenced, orphan.StorePath)
	}
	before := ls.Servers[0].Program.StorePath

	writeNixDemo(t, nx, flake, "v2")
	resp := d.Unix.Do(t, "POST", "/v1/nix/refresh/demo", "")
	var ref wire.NixRefreshed
	resp.Decode(t, &ref)
	if resp.StatusCode != 200 || !ref.Changed || ref.Previous == nil || ref.Previous.StorePath != before ||
		ref.Current.StorePath == before || strings.Join(ref.Replaced, ",") != "demo" {
		t.Fatalf("refresh: %d %s", resp.StatusCode, resp.Bytes)
	}
	if got := marker(); got != "v2" {
		t.Errorf("after the refresh MCPX_NIX_WRAPPED = %q, want v2", got)
	}
	if p := d.Unix.Do(t, "POST", "/v1/nix/refresh/nope", "").Problem(t); p.Status != 404 {
		t.Errorf("refresh of an unknown server: %+v", p)
	}

	var gc wire.NixGC
	d.Unix.Do(t, "POST", "/v1/nix/gc", "").Decode(t, &gc)
	if len(gc.Dropped) != 1 || gc.Dropped[0].StorePath != orphan.StorePath {
		t.Errorf("gc dropped %+v, want %s", gc.Dropped, orphan.StorePath)
	}
	if _, err := os.Lstat(orphan.Root); !os.IsNotExist(err) {
		t.Errorf("the dropped root %s survived (%v)", orphan.Root, err)
	}
	d.Unix.Do(t, "GET", "/v1/nix", "").Decode(t, &ls)
	if len(ls.Unreferenced) != 0 || ls.Servers[0].Program == nil || ls.Servers[0].Program.StorePath != ref.Current.StorePath {
		t.Errorf("GET /v1/nix after gc: %+v", ls)
	}
}

// TestNixRoutesNeedAdmin: a caller that is not an admin (a tailnet peer
// allowed every server) gets 403 on every nix route, and the daemon's
// nix cache stays unlisted and untouched; an admin on the same listener
// is let through.
func TestNixRoutesNeedAdmin(t *testing.T) {
	url := serveIdentified(t, func(r *http.Request) (broker.Caller, error) {
		c := broker.Caller{Name: "dev@example.com", Via: wire.ViaTailnet, Rights: rights.Rights{{}}}
		c.Rights[0].Admin = r.URL.Query().Get("who") == "admin"
		return c, nil
	})
	do := func(method, path string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(wire.HeaderClient, "test") // the browser guard
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, rt := range []struct{ method, path string }{
		{"GET", "/v1/nix"}, {"POST", "/v1/nix/gc"}, {"POST", "/v1/nix/refresh/demo"},
	} {
		code, body := do(rt.method, rt.path+"?who=peer")
		if code != http.StatusForbidden || !strings.Contains(body, wire.ProblemTypeBase+"forbidden") || !strings.Contains(body, "only an admin may") {
			t.Errorf("%s %s as a peer: %d %s, want a 403 problem", rt.method, rt.path, code, body)
		}
	}
	if code, body := do("GET", "/v1/nix?who=admin"); code != http.StatusOK {
		t.Errorf("GET /v1/nix as an admin: %d %s, want 200", code, body)
	}
}
