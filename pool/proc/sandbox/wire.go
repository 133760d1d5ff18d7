package sandbox

import "mcpx.dev/mcpx/pool/proc/sandbox/internal/helper"

// envHelper names the variable that makes a process the helper: its value
// is the number of the inherited file descriptor that carries the request
// in and the replies out (a unix SOCK_SEQPACKET socket, one message each).
// The policy itself never travels in argv (visible in /proc) or in the
// environment (which the child would inherit).
const envHelper = helper.Env

// envUnshare and envGoStage are the helper's other variables (package
// helper): a policy's env may not set them either.
const (
	envUnshare = helper.EnvUnshare
	envGoStage = helper.EnvGoStage
)

// helperArg0 is the helper's argv[0], to tell it apart in a process list
// for the moment it lives (started through unshare, its argv[0] is the
// executable's path).
const helperArg0 = "mcpx-sandbox-helper"

// goStage makes the helper the Go one even where the binary has the C
// stage (helper.PreRuntime), started as a binary without it is: only in
// tests, which run both.
var goStage = false

// mptcpFilter is false only in a test that shows what Landlock alone
// leaves open.
var mptcpFilter = true
