package runner

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/config/chain"
	"mcpx.dev/mcpx/nixresolve"
)

// Settings are the "script" blocks of a config chain merged under the
// command line's layer: what every script run from there gets.
type Settings struct {
	// Prefix and Suffix are the lines run around the script
	// (config.MergeLines).
	Prefix, Suffix []string
	// Interpreter are the commands by extension; Env the variables. The
	// nearest layer wins per key, the command line's over all.
	Interpreter, Env map[string]string
	// InterpreterFiles are the config files that set each extension's
	// interpreter (a relative nix: path ref is its directory's).
	InterpreterFiles map[string]string
	// Deps are the merged script.deps (config.MergeDeps).
	Deps config.ScriptDeps
	// ConfigDirs are the directories of the config files used, nearest
	// first (their package.json files declare packages too).
	ConfigDirs []string
	// Environment is the nearest script.environment, and EnvironmentDir
	// the directory of the file that set it (a relative shell: file is
	// its).
	Environment, EnvironmentDir string
	// Dependencies are the nearest script.dependencies, relative path
	// refs made absolute against their config file's directory, and
	// DependenciesFile that file.
	Dependencies     []string
	DependenciesFile string
	// Runtime is the nearest script.runtime, RuntimeFile the config file
	// that set it (a relative nix: path ref is its directory's).
	Runtime, RuntimeFile string
}

// LoadSettings merges the "script" blocks of the config chain ch (each
// config.json's, nearest first) under the command line's prefix and
// suffix lines and env, the nearest layer of all. A file config.ReadTrusted
// refuses is not used (its lines and commands would run as this user):
// warn, when not nil, is told of it. One that does not load is an error
// naming the file and field.
func LoadSettings(ch chain.Chain, prefix, suffix config.Lines, env map[string]string, warn func(file string, err error)) (Settings, error) {
	pres, sufs := []config.Lines{prefix}, []config.Lines{suffix}
	interps, envs := []map[string]string{nil}, []map[string]string{env}
	var set Settings
	var deps []config.ScriptDeps
	for _, d := range ch {
		if d.Config == "" {
			continue
		}
		// Checked and read as one open file (config.ReadTrusted).
		sc, err := config.LoadScriptTrusted(d.Config, os.Getuid())
		var untrusted *config.UntrustedError
		if errors.As(err, &untrusted) {
			if warn != nil {
				warn(d.Config, err)
			}
			continue
		}
		if err != nil {
			return Settings{}, err
		}
		pres, sufs = append(pres, sc.Prefix), append(sufs, sc.Suffix)
		interps, envs = append(interps, sc.Interpreter), append(envs, sc.Env)
		for ext := range sc.Interpreter {
			if _, ok := set.InterpreterFiles[ext]; !ok {
				if set.InterpreterFiles == nil {
					set.InterpreterFiles = map[string]string{}
				}
				set.InterpreterFiles[ext] = d.Config
			}
		}
		deps, set.ConfigDirs = append(deps, sc.Deps), append(set.ConfigDirs, filepath.Dir(d.Config))
		if set.Environment == "" && sc.Environment != "" {
			set.Environment, set.EnvironmentDir = sc.Environment, filepath.Dir(d.Config)
		}
		if set.DependenciesFile == "" && sc.Dependencies != nil {
			set.DependenciesFile = d.Config
			for _, spec := range sc.Dependencies {
				abs, err := nixresolve.Absolute(spec, filepath.Dir(d.Config))
				if err != nil {
					return Settings{}, fmt.Errorf("%s: script.dependencies: %w", d.Config, err)
				}
				set.Dependencies = append(set.Dependencies, abs)
			}
		}
		if set.Runtime == "" && sc.Runtime != "" {
			set.Runtime, set.RuntimeFile = sc.Runtime, d.Config
		}
	}
	set.Prefix, set.Suffix = config.MergeLines(pres), config.MergeLines(sufs)
	set.Interpreter, set.Env, set.Deps = config.MergeMaps(interps), config.MergeMaps(envs), config.MergeDeps(deps)
	return set, nil
}

// environ is env as KEY=value entries, sorted.
func environ(env map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// ChainDirs are the directories of ch that hold scripts/ or lib/, and the
// script files an override or fallback entry names, nearest first: where
// scripts.Find, scripts.Resolve and scripts.LibDirs look.
func ChainDirs(ch chain.Chain) []string {
	var dirs []string
	for _, d := range ch {
		if d.Scripts != "" || d.Lib != "" || d.Script != "" {
			dirs = append(dirs, d.Path)
		}
	}
	return dirs
}
