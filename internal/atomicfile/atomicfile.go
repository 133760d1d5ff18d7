// Package atomicfile replaces a file's content atomically: the state files
// of the daemon (its record, the pool's memo and schema cache, the nix
// cache, the token ledger, installed units) must never be seen half
// written, and a crash must leave the old content or the new.
package atomicfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces path with b, with mode: a temporary file in the same
// directory (so the rename stays on one file system), written, synced and
// closed, then renamed over path. On any failure the temporary file is
// removed and path is left as it was. Errors name path.
func Write(path string, b []byte, mode fs.FileMode) error {
	if err := write(path, b, mode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func write(path string, b []byte, mode fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after the rename: already gone
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// ReadJSON reads the JSON file path, as Write left it, into v. found is
// false, and err nil, when there is no such file; err says why a file
// could not be read or is not JSON.
func ReadJSON(path string, v any) (found bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	return true, err
}
