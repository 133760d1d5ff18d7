package registry

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/atomicfile"
	"mcpx.dev/mcpx/internal/orderedjson"
)

// writeEntry sets the server called name in the config file at path to
// entry: under "servers" (or a client format's "mcpServers", when the
// file has that), keeping the rest of the file, its members in their order
// and its numbers as written, rewritten indented by two spaces. A file it
// creates is 0600 (in a 0700 directory); an existing one keeps its mode,
// narrowed to 0600 when private (the entry holds a secret). An entry of
// that name already there is an error unless force. The file as it would
// be is loaded with package config first: a file that would not load is
// never written.
func writeEntry(path, name string, entry *orderedjson.Object, force, private bool) error {
	old, err := os.ReadFile(path)
	mode := fs.FileMode(0o600)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		old = nil
	case err != nil:
		return fmt.Errorf("reading the config: %w", err)
	default:
		if fi, err := os.Stat(path); err == nil && !private {
			mode = fi.Mode().Perm()
		}
		if _, err := config.Parse(old, path); err != nil {
			return fmt.Errorf("%s does not load as it is, so mcpx leaves it alone (`mcpx config check --config %s`): %w", path, path, err)
		}
	}
	doc, err := orderedjson.DecodeObject(old)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	key := "servers"
	if !doc.Has(key) && doc.Has("mcpServers") {
		key = "mcpServers"
	}
	servers := doc.Obj(key)
	if servers == nil {
		if v, ok := doc.Get(key); ok && v != nil {
			return fmt.Errorf("%s: its %q is not an object", path, key)
		}
		servers = newObject().Object
		object{doc}.set(key, servers)
	}
	if servers.Has(name) && !force {
		return fmt.Errorf("server %q is already in %s; give --as another name, or --force to replace it", name, path)
	}
	object{servers}.set(name, entry)
	data := []byte(orderedjson.Indent(doc) + "\n")
	if _, err := config.Parse(data, path); err != nil {
		return fmt.Errorf("the entry would not load, so %s is left as it was: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating the config's directory: %w", err)
	}
	return atomicfile.Write(path, data, mode)
}
