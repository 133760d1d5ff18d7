package main

import (
	"cmp"
	"flag"
	"path/filepath"

	"mcpx.dev/mcpx/config/chain"
)

// chainFlagValues are `mcpx serve`'s flags for the config chain (package
// chain): extra paths tried first and last, and the system's directory.
type chainFlagValues struct {
	override, fallback *string
	system             *string
}

func addChainFlags(fs *flag.FlagSet) chainFlagValues {
	v := addChainPathFlags(fs)
	v.system = fs.String("system-config-dir", chain.DefaultSystemDir, "the system's config directory on the config chain (\"off\": none)")
	return v
}

// addChainPathFlags are --override-paths and --fallback-paths alone (run,
// exec, scripts: the CLI's own chain, with the system's default directory).
func addChainPathFlags(fs *flag.FlagSet) chainFlagValues {
	system := chain.DefaultSystemDir
	return chainFlagValues{
		override: fs.String("override-paths", "", "config files, script files or directories tried before every other on a caller's config chain, separated by "+string(filepath.ListSeparator)+" (default $MCPX_OVERRIDE_PATHS)"),
		fallback: fs.String("fallback-paths", "", "config files, script files or directories tried after every other on a caller's config chain (default $MCPX_FALLBACK_PATHS)"),
		system:   &system,
	}
}

// options are the chain options of the daemon: the flags, else their
// variables; the user's config directory (that of the default config
// file); ceilings from $MCPX_CEILING_DIRS beside the config's ceilingDirs.
func (v chainFlagValues) options(getenv func(string) string) (chain.Options, error) {
	opts := chain.Options{
		Override:    splitPaths(cmp.Or(*v.override, getenv("MCPX_OVERRIDE_PATHS"))),
		Fallback:    splitPaths(cmp.Or(*v.fallback, getenv("MCPX_FALLBACK_PATHS"))),
		CeilingDirs: splitPaths(getenv("MCPX_CEILING_DIRS")),
		SystemDir:   *v.system,
	}
	if opts.SystemDir == "off" {
		opts.SystemDir = ""
	}
	def, err := defaultConfigPath(getenv)
	if err != nil {
		return opts, err
	}
	opts.UserDir = filepath.Dir(def)
	return opts, nil
}

func splitPaths(s string) []string {
	var out []string
	for _, p := range filepath.SplitList(s) {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
