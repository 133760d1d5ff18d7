package main

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/config/chain"
)

// linesFlag is a repeatable --prefix or --suffix: the CLI's layer of a
// script's prefix or suffix lines, the nearest of all. "-" stands for the
// lines the config chain gives, spliced in there; without one the flags
// replace them.
type linesFlag struct{ lines config.Lines }

func (f *linesFlag) String() string { return "" }

func (f *linesFlag) Set(v string) error {
	if v == "-" {
		f.lines = append(f.lines, nil)
	} else {
		f.lines = append(f.lines, &v)
	}
	return nil
}

// scriptSettings is the config chain's "script" blocks merged under the
// CLI's flags: the prefix and suffix lines, the interpreters by extension
// and the environment.
type scriptSettings struct {
	prefix, suffix   []string
	interpreter, env map[string]string
	deps             config.ScriptDeps
	configDirs       []string // the directories of the files used, nearest first
	environment      string   // the nearest script.environment
	environmentDir   string   // the directory of the file that set it
}

// loadScriptSettings merges the "script" blocks of the config chain ch
// (each config.json's, nearest first) under the CLI's flags: the lines
// (config.MergeLines), the interpreters and the environment (nearest wins
// per key; --env over all). A file config.Trusted refuses is not used
// (its lines and commands would run as this user), with a warning; one
// that does not load is an error naming the file and field.
func loadScriptSettings(c *cli, ch chain.Chain, prefix, suffix config.Lines, env map[string]string) (scriptSettings, error) {
	pres, sufs := []config.Lines{prefix}, []config.Lines{suffix}
	interps, envs := []map[string]string{nil}, []map[string]string{env}
	var set scriptSettings
	var deps []config.ScriptDeps
	for _, d := range ch {
		if d.Config == "" {
			continue
		}
		var untrusted *config.UntrustedError
		if err := config.Trusted(d.Config); errors.As(err, &untrusted) {
			fmt.Fprintf(c.stderr, "mcpx: config chain: %s: its script block is not used: %v\n", d.Config, err)
			continue
		} // not stat'ed: LoadScript says why

		sc, err := config.LoadScript(d.Config)
		if err != nil {
			return scriptSettings{}, err
		}
		pres, sufs = append(pres, sc.Prefix), append(sufs, sc.Suffix)
		interps, envs = append(interps, sc.Interpreter), append(envs, sc.Env)
		deps, set.configDirs = append(deps, sc.Deps), append(set.configDirs, filepath.Dir(d.Config))
		if set.environment == "" && sc.Environment != "" {
			set.environment, set.environmentDir = sc.Environment, filepath.Dir(d.Config)
		}
	}
	set.prefix, set.suffix = config.MergeLines(pres), config.MergeLines(sufs)
	set.interpreter, set.env, set.deps = config.MergeMaps(interps), config.MergeMaps(envs), config.MergeDeps(deps)
	return set, nil
}

// envFlag is a repeatable --env KEY=VALUE.
type envFlag struct{ vars map[string]string }

func (f *envFlag) String() string { return "" }

func (f *envFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, e.g. --env REPORT_DIR=/tmp/reports")
	}
	if f.vars == nil {
		f.vars = map[string]string{}
	}
	f.vars[k] = val
	return nil
}

// environ is env as KEY=value entries, sorted.
func environ(env map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}
