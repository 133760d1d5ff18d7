package broker

// Native git repository discovery: what `git rev-parse --show-toplevel
// --git-common-dir` would answer for a directory, worked out the way git's
// setup.c does it, without running git. The resolver calls this on every
// repo- and worktree-scoped call, so the answers are cached per directory and
// revalidated with a few stat calls (see gitFind.valid).
//
// What is followed: `.git` directories; `.git` files holding `gitdir: <path>`
// (linked worktrees, submodules, --separate-git-dir checkouts); the gitdir's
// `commondir` file; a directory that is itself a git directory (a bare
// repository, or the inside of a `.git`); core.bare and core.worktree in the
// common dir's config.
//
// What is not: GIT_DIR, GIT_WORK_TREE and GIT_CEILING_DIRECTORIES in the
// daemon's environment (callers' environments are not ours to read; ceilings
// come from ResolverOptions.CeilingDirs instead); GIT_DISCOVERY_ACROSS_FILESYSTEM
// (the walk goes on to the filesystem root across mount points); config
// includes and per-worktree config (extensions.worktreeConfig);
// safe.directory ownership checks (nothing from the repository is executed
// or trusted, only its layout is read).

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// gitPlace says where a directory lies, as far as git is concerned.
type gitPlace uint8

const (
	gitOutside  gitPlace = iota // in no repository
	gitWorktree                 // in a worktree: top, gitDir and commonDir are set
	gitInGitDir                 // inside a git directory (a bare repository or a .git): no worktree
	gitBroken                   // a .git file that leads to no repository: git itself refuses to work here
)

// gitFind is the discovery answer for one canonical directory. It is
// immutable once built and shared between goroutines.
type gitFind struct {
	place     gitPlace
	top       string // the worktree's top level (gitWorktree)
	gitDir    string // the worktree's own git directory, or the git directory we are in
	commonDir string // shared by all worktrees of the repository; the repo key
	gitFile   bool   // found through a .git file rather than a .git directory

	worktreeKey string // "worktree:" + top, built once so a warm Resolve allocates nothing for it

	// checks are what the answer depended on; valid re-stats them.
	checks []gitCheck
	// checked is when the checks last held (unix ns; 0 = not yet), for
	// ResolverOptions.Revalidate.
	checked int64 // accessed atomically
}

// gitCheck is one file system fact an answer depended on: that path is
// absent (fi == nil), or that it is the same file it was (fi != nil).
type gitCheck struct {
	path string
	fi   os.FileInfo
}

// valid reports whether every fact f depended on still holds. It costs one
// stat per check: the .git entries of the directory and each ancestor up to
// the one where the repository was found (up to the root for gitOutside).
//
// Not rechecked, because git itself never changes them under a live
// worktree: a linked worktree's gitdir and its commondir file (`git worktree
// remove` deletes the worktree's .git file, which is checked), and ancestors
// turning into bare repositories (`git init --bare` around an existing
// directory).
func (f *gitFind) valid() bool {
	for _, c := range f.checks {
		if !c.holds() {
			return false
		}
	}
	return true
}

// holds re-stats c.path (following symlinks, as git does).
func (c gitCheck) holds() bool {
	fi, err := os.Stat(c.path)
	if c.fi == nil {
		return err != nil
	}
	return err == nil && sameGitFile(c.fi, fi)
}

// sameGitFile reports whether b is still the file a was. Directories are
// compared by identity only: .git directories change content all the time.
// Files are also compared by size and modification time, which catches
// `git worktree repair`/`move` rewriting a .git file in place.
func sameGitFile(a, b os.FileInfo) bool {
	if !os.SameFile(a, b) || a.Mode() != b.Mode() {
		return false
	}
	return a.IsDir() || (a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()))
}

// discoverGit finds the repository dir (canonical, existing) lies in by
// walking up to the filesystem root, or to just below one of ceilings. It
// returns nil if dir is not a directory.
//
// At each level, as git does: a .git directory that is a git directory
// means a worktree; a .git regular file means a worktree whose git
// directory is elsewhere (and if that file is broken, git stops there with
// an error, and so do we); otherwise a directory that is itself a git
// directory means we are inside one, with no worktree.
func discoverGit(dir string, ceilings map[string]bool) *gitFind {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil
	}
	var checks []gitCheck
	for a := dir; ; {
		dotgit := filepath.Join(a, ".git")
		fi, err := os.Stat(dotgit)
		switch {
		case err != nil:
			checks = append(checks, gitCheck{path: dotgit})
		case fi.IsDir() && isGitDir(dotgit):
			checks = append(checks, gitCheck{dotgit, fi})
			return gitWorktreeAt(a, dotgit, false, checks)
		case fi.Mode().IsRegular():
			checks = append(checks, gitCheck{dotgit, fi})
			gitDir, err := readGitFile(dotgit, a, fi)
			if err != nil {
				return newGitFind(gitFind{place: gitBroken, checks: checks})
			}
			return gitWorktreeAt(a, gitDir, true, checks)
		default: // a .git that is no repository: git looks further up
			checks = append(checks, gitCheck{dotgit, fi})
		}
		if isGitDir(a) {
			if fi, err := os.Stat(a); err == nil {
				checks = append(checks, gitCheck{a, fi})
			}
			common, err := gitCommonDir(a)
			if err != nil {
				return newGitFind(gitFind{place: gitBroken, checks: checks})
			}
			return newGitFind(gitFind{place: gitInGitDir, gitDir: a, commonDir: common, checks: checks})
		}
		parent := filepath.Dir(a)
		if parent == a || ceilings[parent] {
			return newGitFind(gitFind{place: gitOutside, checks: checks})
		}
		a = parent
	}
}

// gitWorktreeAt builds the answer for a worktree whose top level is top and
// whose git directory is gitDir.
func gitWorktreeAt(top, gitDir string, gitFile bool, checks []gitCheck) *gitFind {
	broken := newGitFind(gitFind{place: gitBroken, checks: checks})
	gitDir, err := filepath.EvalSymlinks(gitDir)
	if err != nil {
		return broken
	}
	common, err := gitCommonDir(gitDir)
	if err != nil {
		return broken
	}
	return newGitFind(gitFind{place: gitWorktree, top: top, gitDir: gitDir, commonDir: common, gitFile: gitFile, checks: checks})
}

func newGitFind(f gitFind) *gitFind {
	if f.place == gitWorktree {
		f.worktreeKey = "worktree:" + f.top
	}
	return &f
}

// maxGitFile bounds what is read of a .git or commondir file; git refuses
// .git files larger than 4*PATH_MAX.
const maxGitFile = 4 * 4096

// readGitFile reads the .git file at path (in directory dir, stat'ed as fi)
// and returns the git directory it names, if it is one.
func readGitFile(path, dir string, fi os.FileInfo) (string, error) {
	if fi.Size() > maxGitFile {
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
	errGitFileFormat = errors.New(`gitfile does not start with "gitdir: "`)
	errGitFilePath   = errors.New("gitfile names no usable path")
)

// parseGitFile parses the content of a .git file, "gitdir: <path>", as git's
// read_gitfile_gently does: exactly that prefix, trailing CR/LF trimmed,
// nothing else (spaces belong to the path). A relative path is relative to
// dir, the directory holding the file. The result is lexically clean but
// not symlink-resolved.
func parseGitFile(data []byte, dir string) (string, error) {
	rest, ok := bytes.CutPrefix(data, []byte("gitdir: "))
	if !ok {
		return "", errGitFileFormat
	}
	return gitPathValue(rest, dir)
}

// gitPathValue turns the path held in a git pointer file (.git, commondir)
// into a clean path: trailing CR/LF trimmed, relative to base.
func gitPathValue(v []byte, base string) (string, error) {
	v = bytes.TrimRight(v, "\r\n")
	if len(v) == 0 || bytes.IndexByte(v, 0) >= 0 {
		return "", errGitFilePath
	}
	p := string(v)
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p), nil
}

// gitCommonDir returns the common directory of gitDir: the one its
// commondir file names (relative to gitDir), canonical, or gitDir itself.
func gitCommonDir(gitDir string) (string, error) {
	data, err := gitReadSmall(filepath.Join(gitDir, "commondir"))
	if errors.Is(err, os.ErrNotExist) {
		return gitDir, nil
	}
	if err != nil {
		return "", err
	}
	p, err := gitPathValue(data, gitDir)
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
	if !gitValidHead(filepath.Join(dir, "HEAD")) {
		return false
	}
	common, err := gitCommonDir(dir)
	if err != nil {
		return false
	}
	return gitIsDir(filepath.Join(common, "objects")) && gitIsDir(filepath.Join(common, "refs"))
}

// gitValidHead mirrors git's validate_headref: a symlink into refs/, a
// symbolic ref "ref: refs/...", or a hex object name.
func gitValidHead(path string) bool {
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
	data, err := gitReadSmall(path)
	if err != nil {
		return false
	}
	if ref, ok := bytes.CutPrefix(data, []byte("ref:")); ok {
		return bytes.HasPrefix(bytes.TrimLeft(ref, " \t"), []byte("refs/"))
	}
	n := 0
	for n < len(data) && gitIsHex(data[n]) {
		n++
	}
	return (n == 40 || n == 64) && (n == len(data) || gitIsSpace(data[n]))
}

func gitIsHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
func gitIsSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func gitIsDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// gitReadSmall reads at most maxGitFile bytes of path.
func gitReadSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxGitFile))
}

// gitRepo is what the repo scope needs to know about a repository, keyed by
// its canonical common directory. Immutable once built.
type gitRepo struct {
	key  string // "repo:" + the common dir
	root string // the main worktree's top level; see gitRepoRoot
	bare bool   // core.bare: the common dir has no worktree of its own

	// worktree is core.worktree, canonical, when set and not bare: git
	// takes it as the top level of whatever is found through the common
	// dir itself (a submodule, the inside of its git dir), not of linked
	// worktrees. worktreeKey is "worktree:" + worktree.
	worktree, worktreeKey string
	checked               int64 // accessed atomically: when config last held (unix ns), for ResolverOptions.Revalidate

	config gitCheck // the config file the answer came from; revalidated on each use
}

func (g *gitRepo) valid() bool { return g.config.holds() }

// maxGitConfig bounds how much of a repository's config is read.
const maxGitConfig = 1 << 20

// loadGitRepo reads the repository at the canonical common dir. mainTop is
// the top level of a worktree whose .git file points straight at common
// (a --separate-git-dir checkout), "" if unknown.
func loadGitRepo(common, mainTop string) *gitRepo {
	g := &gitRepo{key: "repo:" + common}
	path := filepath.Join(common, "config")
	g.config = gitCheck{path: path}
	var core gitCore
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Size() <= maxGitConfig {
		if data, err := os.ReadFile(path); err == nil {
			g.config.fi = fi
			core = parseGitConfig(data)
		}
	}
	g.bare = core.bare
	g.root = gitRepoRoot(common, core, mainTop)
	if core.worktree != "" && !core.bare {
		g.worktree = g.root
		g.worktreeKey = "worktree:" + g.root
	}
	return g
}

// gitRepoRoot is the repo scope's root: the main worktree's top level.
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
//     leads back to the main worktree: mainTop, the top of a worktree whose
//     .git file points straight at the common dir, when the first caller
//     came from there; else the common dir's parent. Cached per common dir,
//     so the first answer sticks while the config is unchanged.
func gitRepoRoot(common string, core gitCore, mainTop string) string {
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

// gitCore is what mcpx reads from a repository's config.
type gitCore struct {
	bare     bool   // core.bare
	worktree string // core.worktree, unresolved; "" = unset
}

// parseGitConfig reads core.bare and core.worktree from a git config file.
// It follows git's syntax (config.c) closely enough for these two keys:
// case-insensitive section and key names, `[core]` only (not subsections),
// `key = value` or a bare `key` (true), quotes, backslash escapes and line
// continuations, `#`/`;` comments; the last assignment wins. Includes are
// not followed. Malformed lines are skipped where git would refuse the file.
func parseGitConfig(data []byte) gitCore {
	var c gitCore
	p := gitConfigParser{data: data}
	for p.next() {
		if !strings.EqualFold(p.section, "core") || p.subsection {
			continue
		}
		switch strings.ToLower(p.name) {
		case "bare":
			if b, ok := gitBool(p.value, p.hasValue); ok {
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

// gitBool parses a git boolean: a key with no "=" is true; "" is false.
func gitBool(v string, hasValue bool) (bool, bool) {
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

// gitConfigParser walks the variables of a config file.
type gitConfigParser struct {
	data       []byte
	i          int
	section    string
	subsection bool // the current section has a subsection: [core "x"] or [core.x]

	name     string // the variable just read
	value    string
	hasValue bool
}

// next reads up to the next variable; false at the end.
func (p *gitConfigParser) next() bool {
	for p.i < len(p.data) {
		c := p.data[p.i]
		switch {
		case c == '\n' || c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			p.i++
		case c == '#' || c == ';':
			p.skipLine()
		case c == '[':
			p.readSection()
		case gitIsNameChar(c):
			if p.readVariable() {
				return true
			}
		default:
			p.skipLine()
		}
	}
	return false
}

func (p *gitConfigParser) skipLine() {
	if j := bytes.IndexByte(p.data[p.i:], '\n'); j >= 0 {
		p.i += j + 1
	} else {
		p.i = len(p.data)
	}
}

func gitIsNameChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-'
}

// readSection reads "[name]", "[name "sub"]" or "[name.sub]".
func (p *gitConfigParser) readSection() {
	p.i++ // '['
	start := p.i
	for p.i < len(p.data) && (gitIsNameChar(p.data[p.i]) || p.data[p.i] == '.') {
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
func (p *gitConfigParser) readVariable() bool {
	start := p.i
	for p.i < len(p.data) && gitIsNameChar(p.data[p.i]) {
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
func (p *gitConfigParser) readValue() (string, bool) {
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
