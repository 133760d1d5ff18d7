// Package chain finds the config chain of a directory: the directories whose
// config.json, scripts/ and lib/ apply to a caller working there, nearest
// first.
//
//	c, warns := chain.Find("/home/me/src/repo/sub", chain.Options{
//		UserDir:   "/home/me/.config/mcpx",
//		SystemDir: chain.DefaultSystemDir,
//	})
//	for _, d := range c {
//		fmt.Println(d.Kind, d.Path, d.Config) // project dirs, then user, then system
//	}
//
// # The order
//
//   - each --override-paths entry (Options.Override), in order;
//   - from the directory up to the filesystem root, stopping below a
//     ceiling directory (Options.CeilingDirs, as GIT_CEILING_DIRECTORIES:
//     the walk never enters one), each directory's .config/mcpx/ or, if it
//     has none, its .mcpx/ (both in one directory: a Warning, and
//     .config/mcpx/ is used) — the project directories, nearest first;
//   - the user's config directory (Options.UserDir, $XDG_CONFIG_HOME/mcpx);
//   - the system's (Options.SystemDir, /etc/mcpx);
//   - each --fallback-paths entry (Options.Fallback), in order.
//
// An override or fallback entry is a directory (treated like the others), a
// script file (one of ScriptExtensions: a named script of its own, its base
// name without the extension) or a config file. A directory met twice (a project directory that is the
// user's, an override naming the system's) is kept where it first appears.
//
// Find is pure: it reads the file system and returns. Cache keeps its
// answers per directory for the daemon, found again after a short
// revalidation window.
//
// The package names directories and files; it does not read them. What a
// config.json means and who may use it is the broker's (package
// mcpx.dev/mcpx/broker and its config package).
package chain

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// DefaultSystemDir is the system's config directory.
const DefaultSystemDir = "/etc/mcpx"

// Names of the entries of a chain directory.
const (
	ConfigFile = "config.json"
	ScriptsDir = "scripts"
	LibDir     = "lib"
)

// ScriptExtensions are the extensions of a script file that an override or
// fallback entry may be (package scripts runs them; this package may not
// import it).
var ScriptExtensions = []string{".ts", ".mts", ".cts", ".tsx", ".js", ".mjs", ".cjs", ".jsx"}

// Kind says where a chain directory came from, and so who wrote it.
type Kind string

const (
	KindOverride Kind = "override" // --override-paths / MCPX_OVERRIDE_PATHS
	KindProject  Kind = "project"  // found upward from the cwd
	KindUser     Kind = "user"     // the user's config directory
	KindSystem   Kind = "system"   // /etc/mcpx
	KindFallback Kind = "fallback" // --fallback-paths / MCPX_FALLBACK_PATHS
)

// Dir is one directory of a chain.
type Dir struct {
	Kind Kind
	Path string // the directory; for an override or fallback file, the file
	// Config is its config.json (for a file entry, the file); "" = none.
	Config string
	// Script, for an override or fallback entry that is a script file, is
	// the file (and Config is ""); "" = none.
	Script string
	// Scripts and Lib are its scripts/ and lib/ directories; "" = none.
	Scripts string
	Lib     string
	// Canonical is Path with symlinks resolved: where its files really
	// are, for checks of who may write there.
	Canonical string
}

// Chain is a directory's chain, in precedence order: the first entry's
// definitions win.
type Chain []Dir

// Configs returns the config files of c, in c's order.
func (c Chain) Configs() []string {
	var out []string
	for _, d := range c {
		if d.Config != "" {
			out = append(out, d.Config)
		}
	}
	return out
}

// Options says where the chain looks besides the directory's ancestors.
// Every path is absolute; a relative one is ignored with a Warning.
type Options struct {
	// CeilingDirs stop the upward walk: it never enters one of them (nor
	// goes above). nil = up to the root.
	CeilingDirs []string
	// UserDir is the user's config directory; "" = none.
	UserDir string
	// SystemDir is the system's; "" = none (DefaultSystemDir is the
	// daemon's; tests point it elsewhere).
	SystemDir string
	// Override and Fallback are files or directories tried first and last.
	Override, Fallback []string
}

// Warning is something about the chain worth telling its user that does not
// stop it: two config directories in one place, a missing extra path.
type Warning struct {
	Path string
	Msg  string
}

func (w Warning) String() string { return w.Path + ": " + w.Msg }

// The directory names searched in each ancestor, preferred first.
var (
	preferredDir = filepath.Join(".config", "mcpx")
	legacyDir    = ".mcpx"
)

// Find returns the chain of dir, an absolute canonical directory (the
// caller canonicalises: a cwd with symlinks would find another chain than
// its canonical form), and what is worth warning about.
func Find(dir string, opts Options) (Chain, []Warning) {
	f := finder{seen: map[string]bool{}}
	for _, p := range opts.Override {
		f.extra(KindOverride, p, "--override-paths")
	}
	ceilings := map[string]bool{}
	for _, c := range opts.CeilingDirs {
		if filepath.IsAbs(c) {
			ceilings[filepath.Clean(c)] = true
		}
	}
	// The user's and the system's directories are not project directories,
	// even when a walk from the home directory meets ~/.config/mcpx.
	for _, p := range []string{opts.UserDir, opts.SystemDir} {
		if p != "" {
			f.reserved = append(f.reserved, canonical(p))
		}
	}
	if filepath.IsAbs(dir) {
		f.walk(filepath.Clean(dir), ceilings)
	} else if dir != "" {
		f.warn(dir, "not an absolute path: no project directories searched")
	}
	f.reserved = nil
	if opts.UserDir != "" {
		f.known(KindUser, opts.UserDir)
	}
	if opts.SystemDir != "" {
		f.known(KindSystem, opts.SystemDir)
	}
	for _, p := range opts.Fallback {
		f.extra(KindFallback, p, "--fallback-paths")
	}
	return f.chain, f.warns
}

type finder struct {
	chain    Chain
	warns    []Warning
	seen     map[string]bool // canonical paths already in chain
	reserved []string        // canonical user and system dirs: not project dirs
}

func (f *finder) warn(path, format string, args ...any) {
	f.warns = append(f.warns, Warning{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// walk adds the project directories from dir up, stopping below a ceiling.
// Each step goes one level up, so it ends after as many steps as dir has
// elements.
func (f *finder) walk(dir string, ceilings map[string]bool) {
	for {
		f.project(dir)
		if ceilings[dir] { // started at a ceiling: searched, never left
			return
		}
		parent := filepath.Dir(dir)
		if parent == dir || ceilings[parent] {
			return
		}
		dir = parent
	}
}

// project adds dir's config directory, if it has one.
func (f *finder) project(dir string) {
	pref, legacy := filepath.Join(dir, preferredDir), filepath.Join(dir, legacyDir)
	hasPref, hasLegacy := isDir(pref), isDir(legacy)
	switch {
	case hasPref && hasLegacy:
		f.warn(dir, "has both %s and %s; using %s (merge them, or remove one)", preferredDir, legacyDir, preferredDir)
		f.add(KindProject, pref)
	case hasPref:
		f.add(KindProject, pref)
	case hasLegacy:
		f.add(KindProject, legacy)
	}
}

// known adds the user's or the system's directory if it exists.
func (f *finder) known(kind Kind, dir string) {
	if !filepath.IsAbs(dir) {
		f.warn(dir, "the %s config directory is not an absolute path; ignored", kind)
		return
	}
	if isDir(dir) {
		f.add(kind, filepath.Clean(dir))
	}
}

// extra adds an override or fallback entry: a directory or a file.
func (f *finder) extra(kind Kind, p, flag string) {
	if !filepath.IsAbs(p) {
		f.warn(p, "%s entries must be absolute paths; ignored", flag)
		return
	}
	p = filepath.Clean(p)
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		f.warn(p, "%s entry: %v; ignored", flag, errText(err))
	case fi.IsDir():
		f.add(kind, p)
	case fi.Mode().IsRegular():
		if c := canonical(p); !f.seen[c] {
			f.seen[c] = true
			d := Dir{Kind: kind, Path: p, Config: p, Canonical: c}
			if slices.Contains(ScriptExtensions, filepath.Ext(p)) {
				d.Config, d.Script = "", p
			}
			f.chain = append(f.chain, d)
		}
	default:
		f.warn(p, "%s entry is neither a file nor a directory; ignored", flag)
	}
}

// add appends the directory d unless it is there already (or, for a
// project directory, is the user's or the system's).
func (f *finder) add(kind Kind, d string) {
	c := canonical(d)
	if f.seen[c] {
		return
	}
	for _, r := range f.reserved {
		if c == r {
			return
		}
	}
	f.seen[c] = true
	e := Dir{Kind: kind, Path: d, Canonical: c}
	if isFile(filepath.Join(d, ConfigFile)) {
		e.Config = filepath.Join(d, ConfigFile)
	}
	if isDir(filepath.Join(d, ScriptsDir)) {
		e.Scripts = filepath.Join(d, ScriptsDir)
	}
	if isDir(filepath.Join(d, LibDir)) {
		e.Lib = filepath.Join(d, LibDir)
	}
	f.chain = append(f.chain, e)
}

// canonical is p with symlinks resolved, or p cleaned if that fails.
func canonical(p string) string {
	if c, err := filepath.EvalSymlinks(p); err == nil {
		return c
	}
	return filepath.Clean(p)
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func errText(err error) string {
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case errors.As(err, &pe):
		return pe.Err.Error()
	}
	return err.Error()
}
