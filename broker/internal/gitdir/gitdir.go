// Package gitdir finds the git repository a directory lies in, natively:
// what `git rev-parse --show-toplevel --git-common-dir` would answer,
// worked out the way git's setup.c does it, without running git.
//
//	d := gitdir.Discover("/src/app/pkg", nil)
//	// d.Kind == gitdir.Worktree, d.Top == "/src/app", d.CommonDir == "/src/app/.git"
//	repo := gitdir.ReadRepo(d.CommonDir, d.MainTop)
//	// repo.Root == "/src/app"
//	...
//	if !d.Valid() { // a `git init`, `git worktree remove` or `rm -rf .git` since
//		d = gitdir.Discover("/src/app/pkg", nil)
//	}
//
// The broker's resolver calls this on every repo- and worktree-scoped call,
// so it caches the answers per directory; [Dir.Valid] and [Repo.Valid]
// revalidate a cached answer with a few stat calls and no allocation.
//
// What is followed: `.git` directories; `.git` files holding `gitdir: <path>`
// (linked worktrees, submodules, --separate-git-dir checkouts); the gitdir's
// `commondir` file; a directory that is itself a git directory (a bare
// repository, or the inside of a `.git`); core.bare and core.worktree in the
// common dir's config.
//
// What is not: GIT_DIR, GIT_WORK_TREE and GIT_CEILING_DIRECTORIES in the
// daemon's environment (callers' environments are not ours to read; ceilings
// are passed to Discover instead); GIT_DISCOVERY_ACROSS_FILESYSTEM
// (the walk goes on to the filesystem root across mount points); config
// includes and per-worktree config (extensions.worktreeConfig);
// safe.directory ownership checks (nothing from the repository is executed
// or trusted, only its layout is read).
package gitdir

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Kind says where a directory lies, as far as git is concerned.
type Kind uint8

const (
	Outside  Kind = iota // in no repository
	Worktree             // in a worktree: Top, GitDir and CommonDir are set
	InGitDir             // inside a git directory (a bare repository or a .git): no worktree
	Broken               // a .git file that leads to no repository: git itself refuses to work here
)

// Dir is the discovery answer for one canonical directory. It is immutable
// once built and may be shared between goroutines.
type Dir struct {
	Kind      Kind
	Top       string // the worktree's top level (Worktree)
	GitDir    string // the worktree's own git directory, or the git directory we are in
	CommonDir string // shared by all worktrees of the repository
	// MainTop is Top when the worktree's .git file points straight at the
	// common dir (a --separate-git-dir checkout), whose repository records
	// no main worktree: for [ReadRepo]. "" otherwise.
	MainTop string

	// checks are what the answer depended on; Valid re-stats them.
	checks []check
}

// check is one file system fact an answer depended on: that path is
// absent (fi == nil), or that it is the same file it was (fi != nil).
type check struct {
	path string
	fi   os.FileInfo
}

// Valid reports whether every fact d depended on still holds. It costs one
// stat per check: the .git entries of the directory and each ancestor up to
// the one where the repository was found (up to the root for Outside).
//
// Not rechecked, because git itself never changes them under a live
// worktree: a linked worktree's gitdir and its commondir file (`git worktree
// remove` deletes the worktree's .git file, which is checked), and ancestors
// turning into bare repositories (`git init --bare` around an existing
// directory).
func (d *Dir) Valid() bool {
	for _, c := range d.checks {
		if !c.holds() {
			return false
		}
	}
	return true
}

// holds re-stats c.path (following symlinks, as git does).
func (c check) holds() bool {
	fi, err := os.Stat(c.path)
	if c.fi == nil {
		return err != nil
	}
	return err == nil && sameFile(c.fi, fi)
}

// sameFile reports whether b is still the file a was. Directories are
// compared by identity only: .git directories change content all the time.
// Files are also compared by size and modification time, which catches
// `git worktree repair`/`move` rewriting a .git file in place.
func sameFile(a, b os.FileInfo) bool {
	if !os.SameFile(a, b) || a.Mode() != b.Mode() {
		return false
	}
	return a.IsDir() || (a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()))
}

// Discover finds the repository dir (canonical, existing) lies in by
// walking up to the filesystem root, or to just below one of ceilings
// (canonical directories the walk never moves into, as with
// GIT_CEILING_DIRECTORIES; nil = none). It returns nil if dir is not a
// directory.
//
// At each level, as git does: a .git directory that is a git directory
// means a worktree; a .git regular file means a worktree whose git
// directory is elsewhere (and if that file is broken, git stops there with
// an error, and so do we); otherwise a directory that is itself a git
// directory means we are inside one, with no worktree.
func Discover(dir string, ceilings map[string]bool) *Dir {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil
	}
	var checks []check
	for a := dir; ; {
		dotgit := filepath.Join(a, ".git")
		fi, err := os.Stat(dotgit)
		switch {
		case err != nil:
			checks = append(checks, check{path: dotgit})
		case fi.IsDir() && isGitDir(dotgit):
			checks = append(checks, check{dotgit, fi})
			return worktreeAt(a, dotgit, false, checks)
		case fi.Mode().IsRegular():
			checks = append(checks, check{dotgit, fi})
			gitDir, err := readGitFile(dotgit, a, fi)
			if err != nil {
				return &Dir{Kind: Broken, checks: checks}
			}
			return worktreeAt(a, gitDir, true, checks)
		default: // a .git that is no repository: git looks further up
			checks = append(checks, check{dotgit, fi})
		}
		if isGitDir(a) {
			if fi, err := os.Stat(a); err == nil {
				checks = append(checks, check{a, fi})
			}
			common, err := readCommonDir(a)
			if err != nil {
				return &Dir{Kind: Broken, checks: checks}
			}
			return &Dir{Kind: InGitDir, GitDir: a, CommonDir: common, checks: checks}
		}
		parent := filepath.Dir(a)
		if parent == a || ceilings[parent] {
			return &Dir{Kind: Outside, checks: checks}
		}
		a = parent
	}
}

// worktreeAt builds the answer for a worktree whose top level is top and
// whose git directory is gitDir, found through a .git file if gitFile.
func worktreeAt(top, gitDir string, gitFile bool, checks []check) *Dir {
	broken := &Dir{Kind: Broken, checks: checks}
	gitDir, err := filepath.EvalSymlinks(gitDir)
	if err != nil {
		return broken
	}
	common, err := readCommonDir(gitDir)
	if err != nil {
		return broken
	}
	d := &Dir{Kind: Worktree, Top: top, GitDir: gitDir, CommonDir: common, checks: checks}
	if gitFile && gitDir == common {
		d.MainTop = top
	}
	return d
}

// maxFile bounds what is read of a .git or commondir file; git refuses
// .git files larger than 4*PATH_MAX.
const maxFile = 4 * 4096

// readGitFile reads the .git file at path (in directory dir, stat'ed as fi)
// and returns the git directory it names, if it is one.
func readGitFile(path, dir string, fi os.FileInfo) (string, error) {
	if fi.Size() > maxFile {
		return "", errors.New("gitfile too large")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	target, err := parseGitFile(data, dir)
	if err != nil {
		return "", err
	}
	if !isGitDir(target) {
		return "", errors.New("gitfile names no git directory")
	}
	return target, nil
}

var (
	errFileFormat = errors.New(`gitfile does not start with "gitdir: "`)
	errFilePath   = errors.New("gitfile names no usable path")
)

// parseGitFile parses the content of a .git file, "gitdir: <path>", as git's
// read_gitfile_gently does: exactly that prefix, trailing CR/LF trimmed,
// nothing else (spaces belong to the path). A relative path is relative to
// dir, the directory holding the file. The result is lexically clean but
// not symlink-resolved.
func parseGitFile(data []byte, dir string) (string, error) {
	rest, ok := bytes.CutPrefix(data, []byte("gitdir: "))
	if !ok {
		return "", errFileFormat
	}
	return pathValue(rest, dir)
}

// pathValue turns the path held in a git pointer file (.git, commondir)
// into a clean path: trailing CR/LF trimmed, relative to base.
func pathValue(v []byte, base string) (string, error) {
	v = bytes.TrimRight(v, "\r\n")
	if len(v) == 0 || bytes.IndexByte(v, 0) >= 0 {
		return "", errFilePath
	}
	p := string(v)
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p), nil
}

// readCommonDir returns the common directory of gitDir: the one its
// commondir file names (relative to gitDir), canonical, or gitDir itself.
func readCommonDir(gitDir string) (string, error) {
	data, err := readSmall(filepath.Join(gitDir, "commondir"))
	if errors.Is(err, os.ErrNotExist) {
		return gitDir, nil
	}
	if err != nil {
		return "", err
	}
	p, err := pathValue(data, gitDir)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(p)
}

// isGitDir reports whether dir is a git directory, by git's own test
// (setup.c is_git_directory): a valid HEAD in dir, and objects/ and refs/
// in its common directory. The first stat fails fast for ordinary
// directories.
func isGitDir(dir string) bool {
	if !validHead(filepath.Join(dir, "HEAD")) {
		return false
	}
	common, err := readCommonDir(dir)
	if err != nil {
		return false
	}
	return isDir(filepath.Join(common, "objects")) && isDir(filepath.Join(common, "refs"))
}

// validHead mirrors git's validate_headref: a symlink into refs/, a
// symbolic ref "ref: refs/...", or a hex object name.
func validHead(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil {
		return false
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		dest, err := os.Readlink(path)
		return err == nil && strings.HasPrefix(dest, "refs/")
	}
	if !fi.Mode().IsRegular() {
		return false
	}
	data, err := readSmall(path)
	if err != nil {
		return false
	}
	if ref, ok := bytes.CutPrefix(data, []byte("ref:")); ok {
		return bytes.HasPrefix(bytes.TrimLeft(ref, " \t"), []byte("refs/"))
	}
	n := 0
	for n < len(data) && isHex(data[n]) {
		n++
	}
	return (n == 40 || n == 64) && (n == len(data) || isSpace(data[n]))
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// readSmall reads at most maxFile bytes of path.
func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxFile))
}

// Repo is what the repo scope needs to know about a repository, read from
// its canonical common directory. Immutable once built.
type Repo struct {
	Root string // the main worktree's top level; see repoRoot
	Bare bool   // core.bare: the common dir has no worktree of its own

	// Worktree is core.worktree, canonical, when set and not bare: git
	// takes it as the top level of whatever is found through the common
	// dir itself (a submodule, the inside of its git dir), not of linked
	// worktrees. "" otherwise.
	Worktree string

	config check // the config file the answer came from
	main   check // the main worktree's .git file, when findMainTop found it
}

// Valid reports whether the repository's config is still the file r was
// read from, and the main worktree found by looking for it still the same:
// one or two stats.
func (r *Repo) Valid() bool {
	return r.config.holds() && (r.main.path == "" || r.main.holds())
}

// maxConfig bounds how much of a repository's config is read.
const maxConfig = 1 << 20

// ReadRepo reads the repository at the canonical common dir. mainTop is
// the top level of a worktree whose .git file points straight at common
// (Dir.MainTop), "" if unknown: then, for a --separate-git-dir repository,
// it is looked for (findMainTop), at the cost of reading the common dir's
// parent and the directories of its linked worktrees.
func ReadRepo(common, mainTop string) *Repo {
	r := &Repo{}
	path := filepath.Join(common, "config")
	r.config = check{path: path}
	var core coreVars
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Size() <= maxConfig {
		if data, err := os.ReadFile(path); err == nil {
			r.config.fi = fi
			core = parseConfig(data)
		}
	}
	r.Bare = core.bare
	if separate(common, core) && mainTop == "" {
		mainTop, r.main = findMainTop(common)
	}
	r.Root = repoRoot(common, core, mainTop)
	if core.worktree != "" && !core.bare {
		r.Worktree = r.Root
	}
	return r
}

// repoRoot is the repo scope's root: the main worktree's top level.
//
//   - A bare repository has no main worktree (its worktrees, if any, are all
//     linked): the root is the common dir's parent, which for the common
//     `project/.bare` + `project/<branch>` layout is the project directory.
//     Not the calling worktree's own top: every worktree shares the repo key,
//     and the root must be a function of the key.
//   - core.worktree, when set, names the main worktree (relative to the
//     common dir). Submodules set it: their common dir is
//     <super>/.git/modules/<name>.
//   - A common dir named .git sits in its main worktree.
//   - Otherwise (a --separate-git-dir checkout) git records nothing that
//     leads back to the main worktree: mainTop, the top of the worktree
//     whose .git file points straight at the common dir — the caller's own
//     when it came from there, else the one findMainTop finds beside the
//     common dir or beside a linked worktree; else, with no main worktree
//     to be found, the common dir's parent.
func repoRoot(common string, core coreVars, mainTop string) string {
	switch {
	case core.bare:
		return filepath.Dir(common)
	case core.worktree != "":
		p := core.worktree
		if !filepath.IsAbs(p) {
			p = filepath.Join(common, p)
		}
		if c, err := filepath.EvalSymlinks(p); err == nil {
			return c
		}
		return filepath.Clean(p)
	case filepath.Base(common) == ".git":
		return filepath.Dir(common)
	case mainTop != "":
		return mainTop
	}
	return filepath.Dir(common)
}

// separate reports whether the repository at common is a --separate-git-dir
// one, whose main worktree only a .git file elsewhere names.
func separate(common string, core coreVars) bool {
	return !core.bare && core.worktree == "" && filepath.Base(common) != ".git"
}

// coreVars is what mcpx reads from a repository's config.
type coreVars struct {
	bare     bool   // core.bare
	worktree string // core.worktree, unresolved; "" = unset
}

// parseConfig reads core.bare and core.worktree from a git config file.
// It follows git's syntax (config.c) closely enough for these two keys:
// case-insensitive section and key names, `[core]` only (not subsections),
// `key = value` or a bare `key` (true), quotes, backslash escapes and line
// continuations, `#`/`;` comments; the last assignment wins. Includes are
// not followed. Malformed lines are skipped where git would refuse the file.
func parseConfig(data []byte) coreVars {
	var c coreVars
	p := configParser{data: data}
	for p.next() {
		if !strings.EqualFold(p.section, "core") || p.subsection {
			continue
		}
		switch strings.ToLower(p.name) {
		case "bare":
			if b, ok := parseBool(p.value, p.hasValue); ok {
				c.bare = b
			}
		case "worktree":
			if p.hasValue {
				c.worktree = p.value
			}
		}
	}
	return c
}

// parseBool parses a git boolean: a key with no "=" is true; "" is false.
func parseBool(v string, hasValue bool) (bool, bool) {
	if !hasValue {
		return true, true
	}
	switch strings.ToLower(v) {
	case "true", "yes", "on", "1":
		return true, true
	case "false", "no", "off", "0", "":
		return false, true
	}
	return false, false
}

// configParser walks the variables of a config file.
type configParser struct {
	data       []byte
	i          int
	section    string
	subsection bool // the current section has a subsection: [core "x"] or [core.x]

	name     string // the variable just read
	value    string
	hasValue bool
}

// next reads up to the next variable; false at the end.
func (p *configParser) next() bool {
	for p.i < len(p.data) {
		c := p.data[p.i]
		switch {
		case c == '\n' || c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			p.i++
		case c == '#' || c == ';':
			p.skipLine()
		case c == '[':
			p.readSection()
		case isNameChar(c):
			if p.readVariable() {
				return true
			}
		default:
			p.skipLine()
		}
	}
	return false
}

func (p *configParser) skipLine() {
	if j := bytes.IndexByte(p.data[p.i:], '\n'); j >= 0 {
		p.i += j + 1
	} else {
		p.i = len(p.data)
	}
}

func isNameChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-'
}

// readSection reads "[name]", "[name "sub"]" or "[name.sub]".
func (p *configParser) readSection() {
	p.i++ // '['
	start := p.i
	for p.i < len(p.data) && (isNameChar(p.data[p.i]) || p.data[p.i] == '.') {
		p.i++
	}
	name := string(p.data[start:p.i])
	sub := false
	if dot := strings.IndexByte(name, '.'); dot >= 0 {
		name, sub = name[:dot], true
	}
	if p.i < len(p.data) && (p.data[p.i] == ' ' || p.data[p.i] == '\t') {
		sub = true // [section "subsection"]: skip to the closing quote
		for p.i < len(p.data) && p.data[p.i] != '"' && p.data[p.i] != '\n' {
			p.i++
		}
		if p.i < len(p.data) && p.data[p.i] == '"' {
			for p.i++; p.i < len(p.data) && p.data[p.i] != '"' && p.data[p.i] != '\n'; p.i++ {
				if p.data[p.i] == '\\' && p.i+1 < len(p.data) {
					p.i++
				}
			}
			if p.i < len(p.data) && p.data[p.i] == '"' {
				p.i++
			}
		}
	}
	if p.i >= len(p.data) || p.data[p.i] != ']' {
		p.section, p.subsection = "", false // malformed: ignore what follows until the next header
		p.skipLine()
		return
	}
	p.i++
	p.section, p.subsection = name, sub
}

// readVariable reads "name", "name = value" up to the end of its line.
func (p *configParser) readVariable() bool {
	start := p.i
	for p.i < len(p.data) && isNameChar(p.data[p.i]) {
		p.i++
	}
	p.name = string(p.data[start:p.i])
	for p.i < len(p.data) && (p.data[p.i] == ' ' || p.data[p.i] == '\t') {
		p.i++
	}
	if p.i >= len(p.data) || p.data[p.i] == '\n' || p.data[p.i] == '\r' || p.data[p.i] == '#' || p.data[p.i] == ';' {
		p.value, p.hasValue = "", false
		p.skipLine()
		return true
	}
	if p.data[p.i] != '=' {
		p.skipLine()
		return false
	}
	p.i++
	v, ok := p.readValue()
	p.value, p.hasValue = v, true
	return ok
}

// readValue reads a value as git's parse_value does: leading whitespace
// dropped, trailing unquoted whitespace dropped, quotes removed, \" \\ \n
// \t \b escapes, backslash-newline continues the line, comments end it.
func (p *configParser) readValue() (string, bool) {
	var b []byte
	quoted := false
	pending := 0 // unquoted whitespace seen but not yet kept
	for ; p.i < len(p.data); p.i++ {
		c := p.data[p.i]
		switch {
		case c == '\n':
			if quoted {
				p.i++
				return "", false
			}
			p.i++
			return string(b), true
		case !quoted && (c == ';' || c == '#'):
			p.skipLine()
			return string(b), true
		case !quoted && (c == ' ' || c == '\t' || c == '\r'):
			if len(b) > 0 {
				pending++
			}
			continue
		}
		for ; pending > 0; pending-- {
			b = append(b, ' ')
		}
		switch c {
		case '"':
			quoted = !quoted
		case '\\':
			p.i++
			if p.i >= len(p.data) {
				return "", false
			}
			switch e := p.data[p.i]; e {
			case '\n':
				// continuation
			case '\r':
				if p.i+1 < len(p.data) && p.data[p.i+1] == '\n' {
					p.i++
				}
			case 'n':
				b = append(b, '\n')
			case 't':
				b = append(b, '\t')
			case 'b':
				b = append(b, '\b')
			case '"', '\\':
				b = append(b, e)
			default:
				p.skipLine()
				return "", false
			}
		default:
			b = append(b, c)
		}
	}
	if quoted {
		return "", false
	}
	return string(b), true
}
