//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"os/exec"
	"slices"
)

// Prepare, where there is no containment (not Linux): in Enforce mode it
// refuses, naming what is missing; in BestEffort mode it gives cmd the
// policy's environment and nothing else.
func Prepare(cmd *exec.Cmd, p Policy) (*Cell, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if cmd.Env != nil && !slices.Equal(cmd.Env, p.Env) {
		return nil, errors.New("sandbox: cmd.Env differs from the policy's env, which is the child's whole environment: set Policy.Env")
	}
	enf, err := Plan(&p, Probe())
	if err != nil {
		return nil, err
	}
	cmd.Env = slices.Clone(p.Env)
	return &Cell{cmd: cmd, policy: p, enforcement: enf}, nil
}

// Started returns what the Cell enforces: nothing.
func (c *Cell) Started(ctx context.Context) (Enforcement, error) {
	return c.Enforcement(), nil
}

// Close does nothing: there is nothing to release.
func (c *Cell) Close() error { return nil }

func readCounters([]cgroup) counters { return counters{} }

// MaybeExec does nothing: there is no helper.
func MaybeExec() {}
