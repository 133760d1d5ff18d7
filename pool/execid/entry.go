package execid

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// maxEntryArgs bounds how many arguments are looked at for the program file.
const maxEntryArgs = 32

// maxPackageUp bounds the walk up from a node entry point to its package.json.
const maxPackageUp = 16

// nodeExts name the files whose package.json and lockfile join the identity.
var nodeExts = []string{".js", ".mjs", ".cjs", ".ts", ".mts", ".cts"}

// lockFiles are the lockfiles looked for beside a package.json.
var lockFiles = []string{"package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lock", "bun.lockb"}

const (
	frameEntry  = "mcpx-exec-entry\x00"
	frameDep    = "mcpx-exec-dep\x00"
	frameAbsent = "mcpx-exec-absent\x00"
)

// entryOf finds the program file among args: the first argument not
// starting with "-" that names an existing regular file (relative to
// opts.Dir). It returns the path and the real file, "" if there is none.
func entryOf(opts Options) (path, real string) {
	for i, a := range opts.Args {
		if i == maxEntryArgs {
			break
		}
		if a == "" || strings.HasPrefix(a, "-") {
			continue
		}
		p := a
		if !filepath.IsAbs(p) && opts.Dir != "" {
			p = filepath.Join(opts.Dir, p)
		}
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return p, r
		}
	}
	return "", ""
}

// packageFiles returns, for a node entry point (real, by its extension),
// the nearest package.json above it and the lockfiles that may sit beside
// it (absent ones included: a lockfile that appears is a change); nil for
// any other file or when there is no package.json.
func packageFiles(real string) []string {
	ext := filepath.Ext(real)
	node := false
	for _, e := range nodeExts {
		node = node || ext == e
	}
	if !node {
		return nil
	}
	dir := filepath.Dir(real)
	for range maxPackageUp {
		pj := filepath.Join(dir, "package.json")
		if fi, err := os.Stat(pj); err == nil && fi.Mode().IsRegular() {
			files := []string{pj}
			for _, l := range lockFiles {
				files = append(files, filepath.Join(dir, l))
			}
			return files
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return nil
}

// withEntry adds the program file among opts.Args, and a node entry
// point's package files, to id, whose Value so far is the executable's.
// Without a program file id is unchanged. An entry that cannot be read
// leaves it out.
func withEntry(id ID, opts Options) ID {
	path, real := entryOf(opts)
	if path == "" {
		return id
	}
	hashMax := cmpHashMax(opts.HashMax)
	st := chainOf(path, real)
	entry, err := digest(real, st.real, hashMax, true)
	if err != nil {
		return id
	}
	deps := packageFiles(real)
	id.Entry, id.EntryReal, id.deps = path, real, deps
	id.exec, id.entry, id.dep = id.Value, entry, depsDigest(deps, hashMax)
	id.Value = combine(id.exec, id.entry, id.dep)
	id.Stat.entry = st
	id.Stat.deps = depStats(deps)
	return id
}

// combine frames the parts' identities into one.
func combine(parts ...string) string {
	h := sha256.New()
	io.WriteString(h, frameEntry)
	for _, p := range parts {
		writeLen(h, p)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:16]
}

// writeLen writes s after its length, so no two lists frame alike.
func writeLen(h hash.Hash, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	io.WriteString(h, s)
}

// depsDigest identifies the package files: each one's path, then its
// content (up to hashMax, else its stat), or that it is absent.
func depsDigest(files []string, hashMax int64) string {
	if len(files) == 0 {
		return ""
	}
	h := sha256.New()
	for _, f := range files {
		io.WriteString(h, frameDep)
		writeLen(h, f)
		fi, err := os.Stat(f)
		if err != nil {
			io.WriteString(h, frameAbsent)
			continue
		}
		d, err := digest(f, statOf(fi), hashMax, false)
		if err != nil {
			io.WriteString(h, frameAbsent)
			continue
		}
		io.WriteString(h, d)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// depStats stats each package file; an absent one is a zero entry.
func depStats(files []string) []fileStat {
	var s []fileStat
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			s = append(s, fileStat{})
			continue
		}
		s = append(s, statOf(fi))
	}
	return s
}

// Lost reports whether id lacks a file prev had: its executable, or the
// program file among its arguments. A child whose files are lost keeps
// running; there is nothing to replace it with.
func (id ID) Lost(prev ID) bool {
	return id.Missing() || (prev.Entry != "" && id.Entry != prev.Entry)
}

// Changed returns the path of what differs between id and prev: the
// executable, the program file, or the program's package.json.
func (id ID) Changed(prev ID) string {
	switch {
	case id.Entry == "" || id.execPart() != prev.execPart():
		return id.Path
	case id.Entry != prev.Entry || id.entry != prev.entry || len(id.deps) == 0:
		return id.Entry
	}
	return id.deps[0]
}

// Why a changed identity changed (ID.Why).
const (
	WhyBytes    = "bytes changed"         // the executable is where it was, with other content
	WhyLocation = "location changed"      // the command resolves to another file now
	WhyProgram  = "program file changed"  // the interpreter's program file (moved or rewritten)
	WhyPackage  = "package files changed" // a node program's package.json or lockfiles
)

// Why says why id differs from prev, in the words of the restart it
// causes: the executable's bytes or location, the program file, or the
// program's package files; the one Changed names the path of.
func (id ID) Why(prev ID) string {
	switch {
	case id.Entry == "" || id.execPart() != prev.execPart():
		if id.Real != prev.Real {
			return WhyLocation
		}
		return WhyBytes
	case id.Entry != prev.Entry || id.entry != prev.entry || len(id.deps) == 0:
		return WhyProgram
	}
	return WhyPackage
}

// execPart is the executable's own identity.
func (id ID) execPart() string {
	if id.Entry == "" {
		return id.Value
	}
	return id.exec
}
