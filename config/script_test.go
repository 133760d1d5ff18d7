package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestScriptLinesMerge(t *testing.T) {
	str := func(s string) *string { return &s }
	// Nearest first: the CLI's, the project's, the user's.
	layers := []Lines{{nil, str("cli")}, {str("p0"), nil, str("p1")}, nil, {str("u")}}
	if got, want := MergeLines(layers), []string{"p0", "u", "p1", "cli"}; !slices.Equal(got, want) {
		t.Errorf("MergeLines = %q, want %q", got, want)
	}
	if got := MergeLines([]Lines{{str("only")}, {str("u")}}); !slices.Equal(got, []string{"only"}) {
		t.Errorf("a list without null does not replace: %q", got)
	}
	if got := MergeLines([]Lines{{}, {str("u")}}); len(got) != 0 {
		t.Errorf("[] does not clear: %q", got)
	}
	if got := MergeLines([]Lines{nil, nil}); len(got) != 0 {
		t.Errorf("nothing set: %q", got)
	}
}

func TestLoadScript(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "config.json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := write(`{"servers": {"x": {"comand": "ignored here"}}, "script": {"prefix": [null, "a"], "suffix": null}}`)
	sc, err := LoadScriptTrusted(p, os.Getuid())
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Prefix) != 2 || sc.Prefix[0] != nil || *sc.Prefix[1] != "a" || sc.Suffix != nil {
		t.Errorf("LoadScript = %+v", sc)
	}
	if sc, err := LoadScriptTrusted(filepath.Join(dir, "none.json"), os.Getuid()); err != nil || sc.Prefix != nil {
		t.Errorf("a missing file: %+v, %v", sc, err)
	}
	for body, want := range map[string]string{
		`{"script": {"prefix": "a"}}`: "script.prefix must be a list of strings and nulls",
		`{"script": {"prefix": [1]}}`: "script.prefix[0] is 1, not a string or null",
		`{"script": {"prefx": []}}`:   `unknown field "script.prefx"; did you mean "prefix"?`,
		`{"script": ["a"]}`:           "script must be an object",
		`{"script": {"suffix": [true`: "config " + p,
	} {
		_, err := LoadScriptTrusted(write(body), os.Getuid())
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v, want it to name %s and say %q", body, err, p, want)
		}
	}
	// The daemon's own parse takes the block, and refuses a bad one.
	cfg, err := Parse([]byte(`{"servers": {}, "script": {"suffix": ["b", null]}}`), "c.json")
	if err != nil || len(cfg.Script.Suffix) != 2 {
		t.Errorf("Parse: %+v, %v", cfg, err)
	}
	if _, err := Parse([]byte(`{"servers": {}, "script": {"suffix": [2]}}`), "c.json"); err == nil || !strings.Contains(err.Error(), "script.suffix[0]") {
		t.Errorf("Parse of a bad suffix: %v", err)
	}
}

// TestLoadScriptInterpreterEnv: script.interpreter and script.env are
// read and checked, each error naming the file and the field; MergeMaps
// lets the nearer layer win per key.
func TestLoadScriptInterpreterEnv(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.json")
	write := func(body string) {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"script": {"interpreter": {".py": "python3 -u"}, "env": {"A": "1"}}}`)
	sc, err := LoadScriptTrusted(p, os.Getuid())
	if err != nil || sc.Interpreter[".py"] != "python3 -u" || sc.Env["A"] != "1" {
		t.Fatalf("LoadScript = %+v, %v", sc, err)
	}
	for body, want := range map[string]string{
		`{"script": {"interpreter": {"py": "python3"}}}`: `script.interpreter["py"]: "py" is not a file extension`,
		`{"script": {"interpreter": {".ts": "tsx"}}}`:    `script.interpreter[".ts"]: .ts files run on the JavaScript runtime`,
		`{"script": {"interpreter": {".py": " "}}}`:      `script.interpreter[".py"] is empty`,
		`{"script": {"interpreter": {".py": 3}}}`:        `script.interpreter must be an object of strings`,
		`{"script": {"interpeter": {}}}`:                 `unknown field "script.interpeter"; did you mean "interpreter"?`,
		`{"script": {"env": {"A=B": "1"}}}`:              `script.env: "A=B" is not a variable name`,
		`{"script": {"env": ["A=1"]}}`:                   `script.env must be an object of strings`,
	} {
		write(body)
		_, err := LoadScriptTrusted(p, os.Getuid())
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v, want it to name %s and say %q", body, err, p, want)
		}
	}
	got := MergeMaps([]map[string]string{{"A": "near"}, nil, {"A": "far", "B": "far"}})
	if len(got) != 2 || got["A"] != "near" || got["B"] != "far" {
		t.Errorf("MergeMaps = %v", got)
	}
}

// TestLoadScriptDepsEnvironment: script.deps, script.environment and
// script.runtime are read and checked, each error naming the file and the
// field and saying the fix; MergeDeps takes the nearest from and registry, and merges
// packages per name.
func TestLoadScriptDepsEnvironment(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.json")
	write := func(body string) {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"script": {"deps": {"from": ["specifiers", "host"], "packages": {"is-number": "7.0.0", "@s/p": "^1"}, "registry": "http://127.0.0.1:4873/"}, "environment": "shell:shell.nix"}}`)
	sc, err := LoadScriptTrusted(p, os.Getuid())
	if err != nil || !slices.Equal(sc.Deps.From, []string{"specifiers", "host"}) || sc.Deps.Packages["@s/p"] != "^1" ||
		sc.Deps.Registry != "http://127.0.0.1:4873/" || sc.Environment != "shell:shell.nix" {
		t.Fatalf("LoadScript = %+v, %v", sc, err)
	}
	for _, rt := range []string{"deno", "bun", "node", "/opt/bun/bin/bun", "nix:nixpkgs#deno", "nix:.#node"} {
		write(`{"script": {"runtime": "` + rt + `"}}`)
		if sc, err := LoadScriptTrusted(p, os.Getuid()); err != nil || sc.Runtime != rt {
			t.Errorf("runtime %q: %+v, %v", rt, sc, err)
		}
	}
	for _, env := range []string{"host", "auto", "flake:.#dev", "flake:path:/src/app"} {
		write(`{"script": {"environment": "` + env + `"}}`)
		if sc, err := LoadScriptTrusted(p, os.Getuid()); err != nil || sc.Environment != env {
			t.Errorf("environment %q: %+v, %v", env, sc, err)
		}
	}
	for body, want := range map[string]string{
		`{"script": {"deps": ["npm"]}}`:                            `script.deps must be an object`,
		`{"script": {"deps": {"from": "host"}}}`:                   `script.deps.from must be a list of strings`,
		`{"script": {"deps": {"from": ["hots"]}}}`:                 `script.deps.from[0]: unknown source "hots"; did you mean "host"?`,
		`{"script": {"deps": {"packages": {"is-number@7": "7"}}}}`: `script.deps.packages: "is-number@7" is not an npm package name`,
		`{"script": {"deps": {"packages": {"a/b/c": "1"}}}}`:       `"a/b/c" is not an npm package name`,
		`{"script": {"deps": {"packages": ["is-number"]}}}`:        `script.deps.packages must be an object of strings`,
		`{"script": {"deps": {"registry": "registry.npmjs.org"}}}`: `script.deps.registry must be an http(s) URL`,
		`{"script": {"deps": {"packges": {}}}}`:                    `unknown field "script.deps.packges"; did you mean "packages"?`,
		`{"script": {"environment": "nix"}}`:                       `script.environment: unknown environment "nix"`,
		`{"script": {"environment": 1}}`:                           `script.environment must be a string, not 1`,
		`{"script": {"enviroment": "auto"}}`:                       `unknown field "script.enviroment"; did you mean "environment"?`,
		`{"script": {"runtime": "dneo"}}`:                          `script.runtime: "dneo" is not a runtime; did you mean "deno"?`,
		`{"script": {"runtime": "nix:"}}`:                          `script.runtime: `,
		`{"script": {"runtime": 7}}`:                               `script.runtime must be a string, not 7`,
	} {
		write(body)
		_, err := LoadScriptTrusted(p, os.Getuid())
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v, want it to name %s and say %q", body, err, p, want)
		}
	}
	got := MergeDeps([]ScriptDeps{{Packages: map[string]string{"a": "near"}}, {From: []string{"host"}, Registry: "http://r/"},
		{From: []string{"specifiers"}, Registry: "http://far/", Packages: map[string]string{"a": "far", "b": "far"}}})
	if !slices.Equal(got.From, []string{"host"}) || got.Registry != "http://r/" || got.Packages["a"] != "near" || got.Packages["b"] != "far" {
		t.Errorf("MergeDeps = %+v", got)
	}
}
