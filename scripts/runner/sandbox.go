package runner

import (
	"context"
	"net"
	"os/exec"
	"strconv"
)

// A script confined by the kernel (Sandbox.Confine) lives in a network
// namespace of its own, where nothing listens but what the daemon gives
// it: a listener on its own loopback, made by the sandbox's helper and
// sent back, which the run's relay serves. Its $MCPX_URL names that
// listener; the relay's token is its only credential, as for any run.

// confinedRelayPort is the port of a confined script's relay on its own
// loopback.
const confinedRelayPort = 3128

var confinedRelayURL = "http://127.0.0.1:" + strconv.Itoa(confinedRelayPort)

// Confinement is a runtime started confined by the kernel.
type Confinement interface {
	// Started finishes the start, after cmd.Start: it returns once the
	// runtime runs confined, with the listener on its own loopback.
	Started(ctx context.Context) (net.Listener, error)
	// Close releases what confined it, after cmd.Wait (its cgroups; the
	// listener, which holds its network namespace).
	Close() error
}

// confine makes cmd, a script's runtime, start confined by sb.Confine: it
// reads sb.Read and the run's directory dir, and writes dir.
func (r *Run) confine(cmd *exec.Cmd, sb *Sandbox, dir string) (Confinement, error) {
	read := append([]string{dir, r.dir}, sb.Read...)
	return sb.Confine(cmd, read, []string{dir}, confinedRelayPort)
}

// serveConfined finishes c's start and serves the relay on the listener
// it returns.
func (r *Run) serveConfined(ctx context.Context, c Confinement) error {
	ln, err := c.Started(ctx)
	if err != nil {
		return err
	}
	r.relay.Serve(ln)
	return nil
}
