package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/daemon"
	"mcpx.dev/mcpx/internal/atomicfile"
)

// configSchema is `mcpx config schema`: the config file's JSON Schema on
// stdout (config.Schema).
func configSchema(c *cli) int {
	c.stdout.Write(config.Schema) //nolint:errcheck // as every print to stdout
	return exitOK
}

// configInit is `mcpx config init [--config F]`: it writes the schema
// beside the config (config.SchemaFile, rewritten each time: it is the
// running binary's), and, when the config does not exist, a config that
// names it and serves what the daemon serves without one, the built-in
// demo server. An existing config is never touched; one that does not
// name the schema gets a hint.
func configInit(c *cli, path string) int {
	_, src, _ := daemon.LoadConfig(path, c.getenv) // only the path: a broken config still gets its schema
	target := src.Watched()
	if target == "" {
		fmt.Fprintln(c.stderr, "mcpx config init: no config path: give --config F")
		return exitUsage
	}
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fmt.Fprintf(c.stderr, "mcpx: %v\n", err)
		return exitToolError
	}
	schema := filepath.Join(dir, config.SchemaFile)
	if err := atomicfile.Write(schema, config.Schema, 0o644); err != nil {
		fmt.Fprintf(c.stderr, "mcpx: writing the schema: %v\n", err)
		return exitToolError
	}
	fmt.Fprintf(c.stdout, "wrote %s\n", schema)
	old, err := os.ReadFile(target)
	switch {
	case err == nil:
		var top map[string]json.RawMessage
		if json.Unmarshal(old, &top) == nil && top["$schema"] == nil {
			fmt.Fprintf(c.stdout, "kept %s; for your editor, add to it: \"$schema\": %q\n", target, config.SchemaRef)
		} else {
			fmt.Fprintf(c.stdout, "kept %s\n", target)
		}
		return exitOK
	case !errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(c.stderr, "mcpx: %v\n", err)
		return exitToolError
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx: finding this binary for the demo server: %v\n", err)
		return exitToolError
	}
	if real, err := filepath.EvalSymlinks(self); err == nil {
		self = real
	}
	doc := map[string]any{"$schema": config.SchemaRef, "servers": map[string]any{
		"demo": map[string]any{"command": self, "args": []string{"demo-server"}},
	}}
	b, _ := json.MarshalIndent(doc, "", "  ")
	if err := atomicfile.Write(target, append(b, '\n'), 0o600); err != nil {
		fmt.Fprintf(c.stderr, "mcpx: writing the config: %v\n", err)
		return exitToolError
	}
	fmt.Fprintf(c.stdout, "wrote %s\n", target)
	return exitOK
}
