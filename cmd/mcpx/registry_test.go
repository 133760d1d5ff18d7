package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/registrytest"
)

const registryWeather = `{
	"name": "io.example/weather", "title": "Weather",
	"description": "Forecasts from the example weather service", "version": "1.2.0",
	"repository": {"url": "https://github.com/example/weather", "source": "github"},
	"packages": [{"registryType": "pypi", "identifier": "mcp-weather", "version": "1.2.0", "transport": {"type": "stdio"},
		"environmentVariables": [{"name": "WEATHER_API_KEY", "isRequired": true, "isSecret": true, "description": "the service's key"}]}]
}`

// registryCLI runs mcpx registry with args against a test registry and a
// config file in a temporary directory.
func registryCLI(t *testing.T, reg, cfg string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut strings.Builder
	dir := filepath.Dir(cfg)
	c := &cli{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getenv: func(k string) string {
		return map[string]string{"XDG_STATE_HOME": filepath.Join(dir, "state"), "XDG_CONFIG_HOME": filepath.Join(dir, "config")}[k]
	}}
	code = registryCmd(t.Context(), c, append([]string{"--registry", reg, "--config", cfg}, args...))
	return out.String(), errOut.String(), code
}

func TestRegistryCommands(t *testing.T) {
	reg := registrytest.New(t, registrytest.Server{JSON: registryWeather, Latest: true},
		registrytest.Server{JSON: strings.ReplaceAll(registryWeather, "1.2.0", "1.1.0")})
	cfg := filepath.Join(t.TempDir(), "config.json")

	out, errOut, code := registryCLI(t, reg.URL, cfg, "search", "weather", "forecasts")
	if code != 0 || !strings.Contains(out, "NAME") || !strings.Contains(out, "io.example/weather  1.2.0    pypi") {
		t.Errorf("search: exit %d\n%s%s", code, out, errOut)
	}
	if _, _, code := registryCLI(t, reg.URL, cfg, "search", "weather", "nothing-like-it"); code != exitToolError {
		t.Errorf("search for nothing: exit %d, want %d", code, exitToolError)
	}
	out, _, code = registryCLI(t, reg.URL, cfg, "search", "--json", "weather")
	var list struct{ Servers []json.RawMessage }
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Servers) != 1 || !strings.Contains(string(list.Servers[0]), `"isLatest": true`) {
		t.Errorf("search --json: exit %d\n%s", code, out)
	}

	out, errOut, code = registryCLI(t, reg.URL, cfg, "show", "io.example/weather")
	for _, want := range []string{"version:      1.2.0 (active, latest)", "pypi: mcp-weather@1.2.0 (stdio)", "--env WEATHER_API_KEY=…  env WEATHER_API_KEY  required, secret  the service's key",
		"add it: mcpx registry add io.example/weather@1.2.0 --env WEATHER_API_KEY=…"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("show: exit %d, want %q in\n%s%s", code, want, out, errOut)
		}
	}
	out, _, code = registryCLI(t, reg.URL, cfg, "show", "--versions", "io.example/weather")
	if code != 0 || !strings.Contains(out, "1.2.0    active  latest") || !strings.Contains(out, "1.1.0    active") {
		t.Errorf("show --versions: exit %d\n%s", code, out)
	}
	out, _, code = registryCLI(t, reg.URL, cfg, "show", "--json", "io.example/weather@1.1.0")
	if code != 0 || !strings.Contains(out, `"version":"1.1.0"`) {
		t.Errorf("show --json of 1.1.0: exit %d\n%s", code, out)
	}

	// add: the required key is missing (stdin is no terminal), then given.
	_, errOut, code = registryCLI(t, reg.URL, cfg, "add", "io.example/weather")
	if code != exitToolError || !strings.Contains(errOut, "needs WEATHER_API_KEY (env WEATHER_API_KEY: the service's key)") {
		t.Errorf("add without the key: exit %d\n%s", code, errOut)
	}
	out, errOut, code = registryCLI(t, reg.URL, cfg, "add", "io.example/weather@1.1.0", "--env", "WEATHER_API_KEY=k", "--as", "wx")
	if code != 0 || !strings.Contains(out, "added wx (io.example/weather@1.1.0, pypi) to "+cfg) {
		t.Errorf("add: exit %d\n%s%s", code, out, errOut)
	}
	data, _ := os.ReadFile(cfg)
	if !strings.Contains(string(data), `"mcp-weather==1.1.0"`) {
		t.Errorf("the config:\n%s", data)
	}
	if _, errOut, code = registryCLI(t, reg.URL, cfg, "add", "io.example/weather", "--env", "WEATHER_API_KEY=k", "--as", "wx"); code != exitToolError || !strings.Contains(errOut, "--force") {
		t.Errorf("add over wx: exit %d\n%s", code, errOut)
	}
	if _, errOut, code = registryCLI(t, reg.URL, cfg, "show", "io.example/nope"); code != exitFailed || !strings.Contains(errOut, "not found in the registry") {
		t.Errorf("show of a missing server: exit %d\n%s", code, errOut)
	}
	if _, errOut, code = registryCLI(t, "http://registry.example.org", cfg, "search", "x"); code != exitToolError || !strings.Contains(errOut, "not loopback") {
		t.Errorf("a plain-http registry: exit %d\n%s", code, errOut)
	}
}
