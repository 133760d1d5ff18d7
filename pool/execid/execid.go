// Package execid names what a stdio child runs: the identity of its
// executable, so that the pool replaces a child exactly when its program
// changes.
//
//	id := execid.Of("my-server", execid.Options{Path: childPATH, HashMax: 1 << 20})
//	fmt.Println(id.Value) // sha256:3f2a9c0d1e4b5a67, or missing:my-server
//	...
//	if st := execid.StatOf(id); !st.Equal(id.Stat) {
//		id = execid.Of("my-server", opts) // the stat moved: recompute
//	}
//
// # Identity
//
// The command is looked up through the child's PATH (a name without a
// slash) and followed through symlinks to the real file. Its identity is
// a sha256 of, under distinct framings:
//
//   - the content, when it is at most HashMax bytes;
//   - for content that begins with "#!" (a script), the real file's
//     directory too: a script finds its siblings relative to where it really
//     lives, so byte-identical copies in two directories are two programs,
//     while a symlink re-pointed at an identical copy in the same directory
//     is the same one;
//   - above HashMax, the stat identity of the real file (device, inode,
//     size, modification time, mode): large binaries are not read;
//   - under the nix store (/nix/store/<hash>-<name>/...), the real path
//     alone: a store path is immutable, its name is its content.
//
// A command that does not resolve is missing:<command>. The rendering is
// sha256:<first 16 hex digits>.
//
// # The program an interpreter runs
//
// Most servers are an interpreter and a file: `node dist/index.js`,
// `python server.py`, `sh run.sh`. The first of [Options.Args] (up to 32)
// that does not start with "-" and names an existing regular file
// (relative to Options.Dir) is the program file: its identity (content and
// real directory, as for a script; the stat above HashMax; the path under
// the nix store) joins the executable's. For a node entry point (.js,
// .mjs, .cjs, .ts, .mts, .cts) so does the nearest package.json above it
// (at most 16 levels up) and the lockfiles beside that package.json
// (package-lock.json, npm-shrinkwrap.json, yarn.lock, pnpm-lock.yaml,
// bun.lock, bun.lockb; an absent one counts, so one that appears is a
// change). Files the program imports are not followed. Without a program
// file the identity is the executable's alone.
//
// # Watching
//
// [StatOf] stats what the identity depends on (the looked-up path and every
// symlink hop to the real file, the real file itself; the same for the
// program file; its package files): cheap enough for a tick. Only when it
// moved is [Of] worth calling again.
package execid

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"mcpx.dev/mcpx/internal/defaults"
)

// DefaultHashMax is the largest executable whose content is hashed (1 MiB;
// the config's limits.execHashMax, stated in package internal/defaults);
// larger ones are identified by their stat.
const DefaultHashMax = defaults.ExecHashMax

// MissingPrefix starts the identity of a command that does not resolve.
const MissingPrefix = "missing:"

// nixStore is where immutable store paths live.
const nixStore = "/nix/store/"

// Options say how to resolve a command. The zero value looks up names on
// an empty PATH (so only commands with a slash resolve) and hashes up to
// DefaultHashMax.
type Options struct {
	// Path is the child's PATH, as it will be in its environment.
	Path string
	// Dir is the child's working directory, against which a relative
	// command with a slash (./bin/server) is resolved; "" = the daemon's.
	Dir string
	// HashMax is the largest content hashed; 0 = DefaultHashMax.
	HashMax int64
	// Args are the child's arguments. The first that does not start with
	// "-" and names an existing regular file (relative to Dir) is the
	// program the command runs — `node index.js`, `python server.py` —
	// and joins the identity; nil = the executable alone.
	Args []string
}

// ID is the identity of one command's executable.
type ID struct {
	// Value is sha256:<16 hex>, or missing:<command>.
	Value string
	// Command is the command as given.
	Command string
	// Path is where the command was found (the file exec runs, perhaps a
	// symlink); "" when missing.
	Path string
	// Real is Path with every symlink resolved; "" when missing.
	Real string
	// Entry is the program file among the arguments, as found (relative
	// ones joined to Options.Dir); "" when there is none.
	Entry string
	// EntryReal is Entry with every symlink resolved.
	EntryReal string
	// Stat is what StatOf saw when Value was computed.
	Stat Stat

	// With an Entry, the parts' identities Value combines: the
	// executable's, the program file's, its package files'.
	exec, entry, dep string
	deps             []string // a node entry point's package.json and lockfiles
}

// Missing reports whether the command did not resolve.
func (id ID) Missing() bool { return strings.HasPrefix(id.Value, MissingPrefix) }

// Of resolves command and computes its identity.
func Of(command string, opts Options) ID {
	id := ID{Command: command}
	path, err := lookPath(command, opts)
	if err != nil {
		id.Value = MissingPrefix + command
		return id
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		id.Value = MissingPrefix + command
		return id
	}
	id.Path, id.Real = path, real
	st := StatOf(id)
	v, err := digest(real, st.exe.real, cmpHashMax(opts.HashMax), false)
	if err != nil {
		id.Value = MissingPrefix + command
		return id
	}
	id.Value, id.Stat = v, st
	return withEntry(id, opts)
}

func cmpHashMax(n int64) int64 {
	if n <= 0 {
		return DefaultHashMax
	}
	return n
}

// The framings: each identity kind hashes a distinct prefix, so that no
// content of one kind can collide with another kind's.
const (
	frameContent = "mcpx-exec-content\x00"
	frameScript  = "mcpx-exec-script\x00"
	frameStat    = "mcpx-exec-stat\x00"
	frameNix     = "mcpx-exec-nix\x00"
)

// digest identifies the real file real, whose stat is fi; a script's
// directory, or with withDir any file's, is part of its content.
func digest(real string, fi fileStat, hashMax int64, withDir bool) (string, error) {
	h := sha256.New()
	switch {
	case strings.HasPrefix(real, nixStore):
		io.WriteString(h, frameNix)
		io.WriteString(h, real)
	case fi.size > hashMax:
		io.WriteString(h, frameStat)
		var b [5 * 8]byte
		binary.BigEndian.PutUint64(b[0:], fi.dev)
		binary.BigEndian.PutUint64(b[8:], fi.ino)
		binary.BigEndian.PutUint64(b[16:], uint64(fi.size))
		binary.BigEndian.PutUint64(b[24:], uint64(fi.mtime))
		binary.BigEndian.PutUint64(b[32:], uint64(fi.mode))
		h.Write(b[:])
	default:
		content, err := readMax(real, hashMax)
		if err != nil {
			return "", err
		}
		if withDir || bytes.HasPrefix(content, []byte("#!")) {
			// The directory's length first: no directory and content can
			// be split two ways.
			dir := filepath.Dir(real)
			io.WriteString(h, frameScript)
			var n [8]byte
			binary.BigEndian.PutUint64(n[:], uint64(len(dir)))
			h.Write(n[:])
			io.WriteString(h, dir)
		} else {
			io.WriteString(h, frameContent)
		}
		h.Write(content)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:16], nil
}

// readMax reads at most max+1 bytes of name: a file that grew past max
// since its stat is hashed as far as max+1, and its stat has moved, so the
// next check recomputes it.
func readMax(name string, max int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max+1))
}

// lookPath finds command as exec would with the child's PATH: a command
// with a slash is a path (relative to opts.Dir), a name is searched for in
// each PATH entry; the file must be a regular executable.
func lookPath(command string, opts Options) (string, error) {
	if command == "" {
		return "", errNotFound
	}
	if strings.Contains(command, "/") {
		p := command
		if !filepath.IsAbs(p) && opts.Dir != "" {
			p = filepath.Join(opts.Dir, p)
		}
		return p, executable(p)
	}
	for _, dir := range filepath.SplitList(opts.Path) {
		if dir == "" || !filepath.IsAbs(dir) {
			// exec refuses relative PATH entries (exec.ErrDot): so do we.
			continue
		}
		p := filepath.Join(dir, command)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", errNotFound
}

var errNotFound = errors.New("executable not found")

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if m := fi.Mode(); m.IsDir() || m&0o111 == 0 {
		return fs.ErrPermission
	}
	return nil
}

// Stat is what an identity depends on, as stat saw it: the looked-up path
// and each symlink hop (lstat), and the real file; the same for the
// program file among the arguments; its package files. Compare with Equal.
type Stat struct {
	exe, entry chain
	deps       []fileStat
}

// chain is one looked-up path's stats.
type chain struct {
	hops []fileStat // the path, then each symlink target in turn
	real fileStat
}

// Equal reports whether s and o saw the same files.
func (s Stat) Equal(o Stat) bool {
	return s.exe.equal(o.exe) && s.entry.equal(o.entry) && slices.Equal(s.deps, o.deps)
}

func (c chain) equal(o chain) bool { return c.real == o.real && slices.Equal(c.hops, o.hops) }

// fileStat is one file's stat identity; target is a symlink's text.
type fileStat struct {
	dev, ino uint64
	size     int64
	mtime    int64 // nanoseconds
	mode     uint32
	target   string
}

// maxHops bounds the symlink chain StatOf follows (as the kernel's 40).
const maxHops = 40

// StatOf stats id's chain again: its Path and every symlink hop from it
// (lstat), then its Real file; the same for its Entry; its package files.
// A missing file is a zero entry, so a chain that broke differs from the
// one that was whole. A directory symlink on the way that moved shows as
// a changed real file.
func StatOf(id ID) Stat {
	s := Stat{exe: chainOf(id.Path, id.Real)}
	if id.Entry != "" {
		s.entry = chainOf(id.Entry, id.EntryReal)
		s.deps = depStats(id.deps)
	}
	return s
}

// chainOf stats path and every symlink hop from it, then real.
func chainOf(path, real string) chain {
	var s chain
	p := path
	for i := 0; p != "" && i < maxHops; i++ {
		fi, err := os.Lstat(p)
		if err != nil {
			s.hops = append(s.hops, fileStat{})
			break
		}
		st := statOf(fi)
		if fi.Mode()&fs.ModeSymlink == 0 {
			s.hops = append(s.hops, st)
			break
		}
		t, err := os.Readlink(p)
		if err != nil {
			s.hops = append(s.hops, st)
			break
		}
		st.target = t
		s.hops = append(s.hops, st)
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = t
	}
	if r, err := filepath.EvalSymlinks(path); err == nil && r == real {
		if fi, err := os.Stat(real); err == nil {
			s.real = statOf(fi)
		}
	} else if err == nil {
		// It resolves elsewhere now (a directory symlink moved).
		s.real = fileStat{target: r}
	}
	return s
}

func statOf(fi fs.FileInfo) fileStat {
	st := fileStat{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: uint32(fi.Mode())}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.dev, st.ino = uint64(sys.Dev), uint64(sys.Ino)
	}
	return st
}
