package sandbox

import "mcpx.dev/mcpx/pool/proc/sandbox/internal/helper"

// MaybeExec turns this process into the sandbox's helper when Prepare
// started it so, and then never returns: the helper confines itself and
// execs the child's program, or exits. Otherwise it returns at once.
//
// The helper runs earlier than any caller of MaybeExec: in the init of
// package internal/helper, which this package imports, before the inits
// of nearly every other package of the binary (package doc, "Cost").
// MaybeExec stays for binaries that call it first thing in main (cmd/mcpx)
// or TestMain; it finds nothing to do.
func MaybeExec() { helper.Run() }
