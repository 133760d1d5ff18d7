package nixresolve

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxShellFiles bounds the .nix files shellHash reads beside a shell.nix:
// a shell.nix in a huge tree is identified by the first ones (in walk
// order), not by a walk that reads the whole tree on every lookup.
const maxShellFiles = 256

// shellHash identifies a version of a shell.nix and of what it may import:
// the sha256 over the file and every other .nix file below its directory
// (hidden directories and node_modules skipped, at most maxShellFiles),
// each with its path. shell.nix files import their neighbours
// (`import ./nix/tools.nix`); hashing the file alone kept an environment
// whose imports changed. A file it imports from elsewhere is not seen.
func shellHash(shell string) (string, error) {
	data, err := os.ReadFile(shell)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(data)
	dir := filepath.Dir(shell)
	n := 0
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil // unreadable: not part of the identity
		case d.IsDir() && path != dir && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules"):
			return filepath.SkipDir
		case d.IsDir() || path == shell || !strings.HasSuffix(d.Name(), ".nix") || !d.Type().IsRegular():
			return nil
		case n >= maxShellFiles:
			return filepath.SkipAll
		}
		n++
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		sum := sha256.Sum256(b)
		h.Write([]byte("\x00" + rel + "\x00"))
		h.Write(sum[:])
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)), nil
}
