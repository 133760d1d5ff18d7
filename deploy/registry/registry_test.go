package registry_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/deploy/registry"
	"mcpx.dev/mcpx/internal/testing/registrytest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func client(url string) *registry.Client { return &registry.Client{BaseURL: url} }

func TestClient(t *testing.T) {
	ctx := t.Context()
	srv := registrytest.New(t, weather, weatherOld, fetchOCI, nugetServer, nixServer)
	c := client(srv.URL)

	// Paging: two at a time, the latest versions of io.example/*.
	var names []string
	cursor := ""
	for range 10 {
		l, err := c.List(ctx, registry.ListOptions{Search: "io.example/", Version: "latest", Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range l.Servers {
			names = append(names, s.Server.Name+"@"+s.Server.Version)
		}
		if cursor = l.Metadata.NextCursor; cursor == "" {
			break
		}
	}
	want := []string{"io.example/weather@1.2.0", "io.example/fetch@0.3.1", "io.example/dotnet-tools@0.9.0", "io.example/nix-tool@1.0.0"}
	if !slices.Equal(names, want) {
		t.Errorf("listed %v, want %v", names, want)
	}

	vs, err := c.Versions(ctx, "io.example/weather")
	if err != nil || len(vs.Servers) != 2 {
		t.Fatalf("versions: %v, %v", vs, err)
	}
	got, err := c.Get(ctx, "io.example/weather", "")
	if err != nil {
		t.Fatal(err)
	}
	if got.Server.Version != "1.2.0" || got.Status() != "active" || !got.Meta.Official.IsLatest {
		t.Errorf("latest weather: %+v", got)
	}
	if p := got.Server.Packages[0]; p.RegistryType != "pypi" || !p.EnvironmentVariables[0].IsSecret || p.PackageArguments[1].ValueHint != "cache_dir" {
		t.Errorf("weather's package decoded as %+v", p)
	}
	if !strings.Contains(string(got.Raw), `"isLatest":true`) {
		t.Errorf("raw answer lost: %s", got.Raw)
	}
	old, err := c.Get(ctx, "io.example/weather", "1.1.0")
	if err != nil || old.Server.Version != "1.1.0" {
		t.Errorf("weather 1.1.0: %v, %v", old, err)
	}
	_, err = c.Get(ctx, "io.example/nope", "")
	if !errors.Is(err, registry.ErrNotFound) || !strings.Contains(err.Error(), "Server not found") {
		t.Errorf("a missing server: %v, want ErrNotFound with the registry's message", err)
	}
}

const userConfig = `{
  "servers": {
    "demo": {"command": "mcpx", "args": ["demo-server"], "max": 10}
  },
  "pool": {"maxInstances": 10, "idleTimeout": "10m"}
}
`

// TestAddGolden: the pypi, oci, nuget and nix entries as written into a
// config with other entries, which stay as they were.
func TestAddGolden(t *testing.T) {
	ctx := t.Context()
	srv := registrytest.New(t, weather, weatherOld, fetchOCI, nugetServer, nixServer)
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(userConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	noLaunchers := func(string) (string, error) { return "", errors.New("not found") }
	for _, o := range []registry.AddOptions{
		{Name: "io.example/weather", Values: map[string]string{"WEATHER_API_KEY": "k-123", "cache_dir": "/var/cache/weather"}},
		{Name: "io.example/weather", Version: "1.1.0", As: "weather-old", Values: map[string]string{"WEATHER_API_KEY": "k-123", "cache_dir": "/tmp/w", "units": "imperial"}},
		{Name: "io.example/fetch", Values: map[string]string{"FETCH_TOKEN": "t-456"}},
		{Name: "io.example/dotnet-tools"},
		{Name: "io.example/nix-tool"},
	} {
		o.Client, o.Config, o.StateDir, o.LookPath = client(srv.URL), path, t.TempDir(), noLaunchers
		res, err := registry.Add(ctx, o)
		if err != nil {
			t.Fatalf("add %s: %v", o.Name, err)
		}
		if launcher := map[string]string{"pypi": "uvx", "oci": "docker", "nuget": "dnx"}[res.Kind]; launcher != "" &&
			(len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], launcher+" is not on PATH")) {
			t.Errorf("add %s: warnings %q, want one that %s is missing", o.Name, res.Warnings, launcher)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/add.golden.json", got)
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("config holding secrets is %v, want 0600", fi.Mode().Perm())
	}
}

func golden(t *testing.T, file string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if string(got) != string(want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", file, got, want)
	}
}

func TestAddRefusals(t *testing.T) {
	ctx := t.Context()
	deleted := weather
	deleted.Status = "deleted"
	deleted.JSON = strings.ReplaceAll(strings.ReplaceAll(weather.JSON, "1.2.0", "9.0.0"), "io.example/weather", "io.example/gone")
	sseOnly := registrytest.Server{Latest: true, JSON: `{"name": "io.example/old-sse", "description": "SSE only", "version": "1.0.0",
		"remotes": [{"type": "sse", "url": "https://old.example.org/sse"}]}`}
	localHTTP := registrytest.Server{Latest: true, JSON: `{"name": "io.example/local-http", "description": "a package serving HTTP", "version": "1.0.0",
		"packages": [{"registryType": "npm", "identifier": "local-http", "version": "1.0.0", "transport": {"type": "streamable-http", "url": "http://localhost:{port}/mcp"}}]}`}
	srv := registrytest.New(t, weather, fetchOCI, bundleOnly, deleted, remote("http://127.0.0.1:1"), sseOnly, localHTTP)
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	add := func(o registry.AddOptions) error {
		o.Client, o.Config, o.StateDir = client(srv.URL), path, dir
		o.LookPath = func(string) (string, error) { return "/bin/true", nil }
		_, err := registry.Add(ctx, o)
		return err
	}
	for _, tc := range []struct {
		o    registry.AddOptions
		want []string
	}{
		{registry.AddOptions{Name: "io.example/weather"}, []string{"WEATHER_API_KEY (env WEATHER_API_KEY: the service's key)", "cache_dir (argument cache_dir", "--env KEY=VALUE"}},
		{registry.AddOptions{Name: "io.example/weather", Values: map[string]string{"WEATHER_API_KEY": "k", "cache_dir": "/c", "units": "kelvin"}}, []string{`units (argument --units) is "kelvin"`, "metric, imperial"}},
		{registry.AddOptions{Name: "io.example/weather", Values: map[string]string{"WEATHER_API_KEY": "k", "cache_dir": "/c", "WEATHER_APIKEY": "x"}}, []string{"no input called WEATHER_APIKEY"}},
		{registry.AddOptions{Name: "io.example/fetch", Use: "npm"}, []string{"has no npm; it has oci"}},
		{registry.AddOptions{Name: "io.example/bundle"}, []string{"only mcpb", "cannot run"}},
		{registry.AddOptions{Name: "io.example/gone"}, []string{"deleted"}},
		{registry.AddOptions{Name: "io.example/nothing"}, []string{"not found in the registry"}},
		{registry.AddOptions{Name: "io.example/fetch", As: "my fetch", Values: map[string]string{"FETCH_TOKEN": "t"}}, []string{`"my fetch" is not a server name`}},
		{registry.AddOptions{Name: "com.example/remote-demo", Use: "remote"}, []string{"token (header Authorization: your API token)"}},
		{registry.AddOptions{Name: "io.example/old-sse"}, []string{"https://old.example.org/sse is sse", "streamable HTTP only"}},
		{registry.AddOptions{Name: "io.example/local-http"}, []string{"serves streamable-http at http://localhost:{port}/mcp", "stdio only"}},
	} {
		err := add(tc.o)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("add %s %v: error %v, want one saying %q", tc.o.Name, tc.o.Values, err, w)
			}
		}
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("a refused add wrote %s", path)
	}

	// An entry of the name is an error, unless Force.
	fetch := registry.AddOptions{Name: "io.example/fetch", Values: map[string]string{"FETCH_TOKEN": "t"}}
	if err := add(fetch); err != nil {
		t.Fatal(err)
	}
	if err := add(fetch); err == nil || !strings.Contains(err.Error(), `server "fetch" is already in`) || !strings.Contains(err.Error(), "--force") {
		t.Errorf("second add: %v, want the name taken", err)
	}
	fetch.Force = true
	if err := add(fetch); err != nil {
		t.Errorf("forced add: %v", err)
	}

	// A deprecated version is added, with a warning saying why.
	old := registrytest.New(t, registrytest.Server{Latest: true, Status: "deprecated", JSON: nugetServer.JSON})
	res, err := registry.Add(ctx, registry.AddOptions{Client: client(old.URL), Name: "io.example/dotnet-tools", Config: path, StateDir: dir,
		LookPath: func(string) (string, error) { return "/bin/true", nil }})
	if err != nil || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "io.example/dotnet-tools@0.9.0 is deprecated") {
		t.Errorf("a deprecated version: %+v, %v", res, err)
	}

	// A config that does not load is left alone.
	if err := os.WriteFile(path, []byte(`{"servers": {"x": {"comand": "y"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := add(fetch); err == nil || !strings.Contains(err.Error(), "does not load as it is") {
		t.Errorf("add to a broken config: %v", err)
	}
}

// TestAsked: a required input with no value is asked for, once, before
// anything is written; a secret is marked for the prompt.
func TestAsked(t *testing.T) {
	srv := registrytest.New(t, weather)
	path := filepath.Join(t.TempDir(), "config.json")
	var asked []string
	_, err := registry.Add(context.Background(), registry.AddOptions{
		Client: client(srv.URL), Name: "io.example/weather", Config: path, StateDir: t.TempDir(),
		Values: map[string]string{"cache_dir": "/c"},
		Prompt: func(v registry.Variable) (string, error) {
			asked = append(asked, v.Key+":"+map[bool]string{true: "secret", false: "plain"}[v.IsSecret])
			return "asked-key", nil
		},
		LookPath: func(string) (string, error) { return "/bin/true", nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(asked, []string{"WEATHER_API_KEY:secret"}) {
		t.Errorf("asked %v, want the key once, as a secret", asked)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), `"WEATHER_API_KEY": "asked-key"`) {
		t.Errorf("the answer is not in the entry:\n%s", data)
	}
}

// TestSearch: every term must match, the first by the registry's search
// of names, each other one in the server's name, title or description in
// any case; the latest versions only, at most limit of them, found across
// pages (the registry's answers come 100 at a time).
func TestSearch(t *testing.T) {
	servers := []registrytest.Server{weather, weatherOld, fetchOCI, nugetServer, nixServer}
	for i := range 150 {
		desc := "filler"
		if i == 140 {
			desc = "the Needle on the second page"
		}
		servers = append(servers, registrytest.Server{Latest: true, JSON: fmt.Sprintf(`{"name": "io.example/bulk-%03d", "version": "1.0.0", "title": "Bulk %d", "description": %q}`, i, i, desc)})
	}
	c := client(registrytest.New(t, servers...).URL)
	names := func(terms []string, limit int) []string {
		t.Helper()
		found, err := c.Search(t.Context(), terms, limit)
		if err != nil {
			t.Fatalf("search %q: %v", terms, err)
		}
		out := []string{}
		for _, s := range found {
			out = append(out, s.Server.Name+"@"+s.Server.Version)
		}
		return out
	}
	for _, tc := range []struct {
		terms []string
		limit int
		want  []string
	}{
		{[]string{"weather"}, 30, []string{"io.example/weather@1.2.0"}},
		{[]string{"io.example/", "FORECASTS", "Weather"}, 30, []string{"io.example/weather@1.2.0"}}, // the description, the name, in any case
		{[]string{"io.example/", "forecasts", "nowhere"}, 30, []string{}},
		{[]string{"io.example/", "needle"}, 30, []string{"io.example/bulk-140@1.0.0"}},                                                           // on the second page
		{[]string{"io.example/", "bulk 14"}, 3, []string{"io.example/bulk-014@1.0.0", "io.example/bulk-140@1.0.0", "io.example/bulk-141@1.0.0"}}, // the title
		{[]string{"bulk-"}, 5, []string{"io.example/bulk-000@1.0.0", "io.example/bulk-001@1.0.0", "io.example/bulk-002@1.0.0", "io.example/bulk-003@1.0.0", "io.example/bulk-004@1.0.0"}},
	} {
		if got := names(tc.terms, tc.limit); !slices.Equal(got, tc.want) {
			t.Errorf("search %q (limit %d) = %v, want %v", tc.terms, tc.limit, got, tc.want)
		}
	}
	if _, err := c.Search(t.Context(), nil, 30); err == nil {
		t.Error("a search with no term: no error")
	}
}
