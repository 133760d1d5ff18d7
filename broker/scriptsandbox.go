package broker

import (
	"context"
	"net"
	"os/exec"
	"slices"

	"mcpx.dev/mcpx/pool/confine"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// A code-mode script run for a caller who is not the daemon's owner is
// confined: on deno by deno's permissions, on bun or node by the kernel,
// as a child of that caller's would be (docs/sandbox.md). ConfineScript is
// the kernel's way; package scripts/runner drives it
// (runner.Sandbox.Confine).

// ConfinedScript is a script's runtime started confined by the kernel.
type ConfinedScript struct{ cell *sandbox.Cell }

// ConfineScript makes cmd, a script's runtime (its Env the whole
// environment), start confined: it reads the system's directories, the
// runtime and its package (confine.ProgramReads of its executable) and
// read; writes write; reaches nothing but a listener on its own
// 127.0.0.1:relayPort (Started returns it, for the run's relay); is
// bounded by confine.DefaultLimits. Where this kernel cannot confine it,
// nothing starts: the error names the missing feature.
func ConfineScript(cmd *exec.Cmd, read, write []string, relayPort uint16) (*ConfinedScript, error) {
	p := scriptPolicy(cmd.Path, read, write, relayPort)
	p.Env = cmd.Env
	cell, err := sandbox.Prepare(cmd, p)
	if err != nil {
		return nil, err
	}
	return &ConfinedScript{cell: cell}, nil
}

func scriptPolicy(exe string, read, write []string, relayPort uint16) sandbox.Policy {
	return sandbox.Policy{
		Read:    slices.Concat(sandbox.SystemRead(), confine.ProgramReads(exe, []string{exe}, ""), read),
		Write:   slices.Concat(write, sandbox.Devices()),
		Network: sandbox.NetworkProxy, ProxyPort: relayPort,
		Limits: confine.DefaultLimits, Mode: sandbox.Enforce,
		Env: []string{},
	}
}

// ScriptConfinement says why this kernel cannot confine a script's
// runtime (ConfineScript); nil if it can.
func ScriptConfinement() error {
	p := scriptPolicy("/", nil, nil, 1)
	_, err := sandbox.Plan(&p, sandbox.Probe())
	return err
}

// Started finishes the start, after cmd.Start: it returns once the
// runtime runs confined, with the listener on its own loopback.
func (c *ConfinedScript) Started(ctx context.Context) (net.Listener, error) {
	if _, err := c.cell.Started(ctx); err != nil {
		return nil, err
	}
	return c.cell.Listener(), nil
}

// Close releases its cgroups and its listener, after cmd.Wait.
func (c *ConfinedScript) Close() error { return c.cell.Close() }
