package broker

import (
	"cmp"
	"time"

	"mcpx.dev/mcpx/config"
)

// CodeMode is the MCP endpoint's code mode as the config sets it, its
// zeros filled (docs/mcp.md, "Code mode").
type CodeMode struct {
	Mode       string // "tools", "code" or "both"
	Runtime    string // "" = the first of deno, bun, node on PATH
	RunTimeout time.Duration
	MaxOutput  int // bytes of stdout, and of stderr
}

// CodeMode returns the config's code mode.
func (b *Broker) CodeMode() CodeMode {
	mc := b.currentConfig().MCP
	return CodeMode{
		Mode:       cmp.Or(mc.Mode, "tools"),
		Runtime:    mc.Runtime,
		RunTimeout: cmp.Or(mc.RunTimeout.D(), config.DefaultRunTimeout),
		MaxOutput:  cmp.Or(mc.MaxOutput, config.DefaultRunOutput),
	}
}
