package scripts

import (
	"os"
	"path/filepath"
)

// ChainDirs returns the config chain's directories for cwd, nearest first:
// from cwd up to the root, each directory's `.config/mcpx` (preferred) or
// `.mcpx`, whichever exists, then userDir when it exists ("" = none). cwd
// should be canonical (absolute, symlinks resolved).
//
// TODO(issue 10, 2026-11-30): the config chain's own upward search (ceiling
// directories, override and fallback paths, /etc/mcpx) replaces this walk
// once it lands; Find, Lookup and LibDirs already take its ordered list.
func ChainDirs(cwd, userDir string) []string {
	var dirs []string
	for d := filepath.Clean(cwd); ; {
		for _, c := range []string{filepath.Join(d, ".config", "mcpx"), filepath.Join(d, ".mcpx")} {
			if isDir(c) {
				dirs = append(dirs, c)
				break
			}
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if userDir != "" && isDir(userDir) {
		user := filepath.Clean(userDir)
		for _, d := range dirs {
			if d == user {
				return dirs // $HOME/.config/mcpx found on the walk already
			}
		}
		dirs = append(dirs, user)
	}
	return dirs
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
