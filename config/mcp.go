package config

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// MCP is the "mcp" block: the MCP endpoint's tool surface (docs/mcp.md,
// "Code mode").
//
//	"mcp": {"mode": "both", "runtime": "deno", "runTimeout": "60s"}
type MCP struct {
	// Mode is what /mcp lists to a caller whose client and grant ask for
	// nothing: "tools" (every tool, the default), "code" (search and run
	// only) or "both". run is offered only to callers that may run code
	// (the owner, or a grant that says code).
	Mode string `json:"mode,omitempty"`
	// Runtime runs code mode's snippets: deno, bun, node or a path to one;
	// "" = the first of them on the daemon's PATH. A caller other than
	// the owner runs only on deno, whose permissions confine the script.
	Runtime string `json:"runtime,omitempty"`
	// RunTimeout bounds one run; 0 = DefaultRunTimeout.
	RunTimeout Duration `json:"runTimeout,omitempty"`
	// MaxOutput bounds what one run may print (stdout and stderr each),
	// in bytes; 0 = DefaultRunOutput.
	MaxOutput int `json:"maxOutput,omitempty"`
}

// MCPModes are the values of MCP.Mode.
var MCPModes = []string{"tools", "code", "both"}

func (p *problems) decodeMCP(mc *MCP, raw json.RawMessage) {
	if isNull(raw) {
		return
	}
	members, err := objectMembers(raw)
	if err != nil {
		p.add("", "mcp", "mcp must be an object", `such as {"mode": "both"}`)
		return
	}
	fields := map[string]fieldSpec{
		"mode":       {&mc.Mode, `"tools", "code" or "both"`},
		"runtime":    {&mc.Runtime, `"deno", "bun", "node" or a path to one's binary`},
		"runTimeout": {&mc.RunTimeout, `a duration string such as "60s"`},
		"maxOutput":  {&mc.MaxOutput, "a non-negative integer (bytes)"},
	}
	p.decodeFields("", "mcp.", members, fields, map[string]bool{})
	if mc.Mode != "" && !slices.Contains(MCPModes, mc.Mode) {
		p.add("", "mcp.mode", fmt.Sprintf("unknown mode %q", mc.Mode), hintFor(mc.Mode, MCPModes, "modes"))
	}
	if mc.MaxOutput < 0 {
		p.add("", "mcp.maxOutput", "mcp.maxOutput is negative", "leave it out for the default, or give a number of bytes")
	}
}

// Code mode's bounds when the config sets none.
const (
	DefaultRunTimeout = 60 * time.Second
	DefaultRunOutput  = 1 << 20
)
