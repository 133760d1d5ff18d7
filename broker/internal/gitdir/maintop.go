package gitdir

import (
	"os"
	"path/filepath"
	"slices"
)

// maxMainTopEntries bounds how many entries of one directory findMainTop
// looks at, so a repository stored in a huge directory costs at most that
// many stats when its main worktree is looked for.
const maxMainTopEntries = 512

// findMainTop looks for the main worktree of a --separate-git-dir
// repository, whose git directory (common) records nothing that leads back
// to it: the worktree whose .git file names common itself. It looks where
// `git init --separate-git-dir` and `git worktree add ../x` put worktrees:
// in common's parent directory and among its entries, and beside each
// linked worktree the common dir lists (worktrees/*/gitdir). The first
// match in that order (entries by name) wins, so every caller of the
// repository gets the same answer. It returns the top level, canonical,
// and the .git file's check; "" if there is none.
func findMainTop(common string) (string, check) {
	seen := make(map[string]bool)
	for _, dir := range mainTopCandidates(common) {
		if seen[dir] {
			continue
		}
		seen[dir] = true
		if top, c, ok := pointsAt(dir, common); ok {
			return top, c
		}
		f, err := os.Open(dir)
		if err != nil {
			continue
		}
		names, _ := f.Readdirnames(maxMainTopEntries)
		f.Close()
		slices.Sort(names)
		for _, n := range names {
			if top, c, ok := pointsAt(filepath.Join(dir, n), common); ok {
				return top, c
			}
		}
	}
	return "", check{}
}

// mainTopCandidates lists the directories findMainTop searches: common's
// parent, then the parent of each linked worktree common records.
func mainTopCandidates(common string) []string {
	dirs := []string{filepath.Dir(common)}
	wts := filepath.Join(common, "worktrees")
	f, err := os.Open(wts)
	if err != nil {
		return dirs
	}
	names, _ := f.Readdirnames(maxMainTopEntries)
	f.Close()
	slices.Sort(names)
	for _, n := range names {
		data, err := readSmall(filepath.Join(wts, n, "gitdir"))
		if err != nil {
			continue
		}
		// gitdir names the linked worktree's .git file.
		if p, err := pathValue(data, filepath.Join(wts, n)); err == nil {
			dirs = append(dirs, filepath.Dir(filepath.Dir(p)))
		}
	}
	return dirs
}

// pointsAt reports whether dir holds a .git file naming common itself (not
// a linked worktree's git dir), and returns dir canonical with the file's
// check.
func pointsAt(dir, common string) (string, check, bool) {
	dotgit := filepath.Join(dir, ".git")
	fi, err := os.Stat(dotgit)
	if err != nil || !fi.Mode().IsRegular() {
		return "", check{}, false
	}
	target, err := readGitFile(dotgit, dir, fi)
	if err != nil {
		return "", check{}, false
	}
	if t, err := filepath.EvalSymlinks(target); err != nil || t != common {
		return "", check{}, false
	}
	top, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", check{}, false
	}
	return top, check{dotgit, fi}, true
}
