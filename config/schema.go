package config

import _ "embed"

// Schema is the JSON Schema (draft 2020-12) of the config file, in mcpx's
// own format and the MCP clients' formats it reads: `mcpx config schema`
// prints it, and `mcpx config init` writes it beside the config as
// SchemaFile, which the config names with "$schema": "./config.schema.json"
// so that an editor validates and completes it. It is written by hand,
// since the decoder reads values no reflection would describe (durations
// as strings, a boolean or a list, an object or a string); the tests hold
// it to the decoder: the keys each accepts, the unknown keys each refuses
// (in mcpx's format everywhere, in a client's only where the decoder
// refuses them too) and every config of the repository's testdata and
// docs. The caller must not modify it.
//
//go:embed schema.json
var Schema []byte

// SchemaFile is the name `mcpx config init` gives the schema beside the
// config file, and SchemaRef what a config names it by.
const (
	SchemaFile = "config.schema.json"
	SchemaRef  = "./" + SchemaFile
)
