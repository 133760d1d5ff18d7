package sandbox

// envHelper names the variable that makes a process the helper: its value
// is the number of the inherited file descriptor that carries the request
// in and the replies out (a unix SOCK_SEQPACKET socket, one message each).
// The policy itself never travels in argv (visible in /proc) or in the
// environment (which the child would inherit).
const envHelper = "MCPX_SANDBOX_HELPER"

// helperArg0 is the helper's argv[0], to tell it apart in a process list
// for the moment it lives.
const helperArg0 = "mcpx-sandbox-helper"

// maxMessage bounds the request. The kernel bounds a SOCK_SEQPACKET
// message by the socket's send buffer, some 200 KiB.
const maxMessage = 1 << 20

// maxReply bounds a reply: an Enforcement, an error.
const maxReply = 64 << 10

// request is what the daemon sends the helper, once, after the helper has
// been moved into its cgroups.
type request struct {
	// Path and Args are what the helper execs: the program's path and its
	// whole argv, argv[0] included; the environment is Policy.Env.
	Path   string      `json:"path"`
	Args   []string    `json:"args"`
	Policy Policy      `json:"policy"`
	Plan   Enforcement `json:"plan"`
	Setup  setup       `json:"setup"`
}

// setup is what the helper does, decided by the daemon from the policy
// and what the kernel offers (Plan), so that the helper decides nothing.
type setup struct {
	// LoopbackUp: the helper is in a network namespace of its own, whose
	// lo it brings up.
	LoopbackUp bool `json:"loopbackUp,omitempty"`
	// ProxyPort, if not 0, is the port of the listener the helper makes on
	// its 127.0.0.1 and sends back.
	ProxyPort uint16 `json:"proxyPort,omitempty"`
	// Rlimits are set in order.
	Rlimits []rlimit `json:"rlimits,omitempty"`
	// Landlock is the ABI to restrict with, 0 for none; LandlockTCP adds
	// the TCP port rules (NetworkLoopback).
	Landlock    int  `json:"landlock,omitempty"`
	LandlockTCP bool `json:"landlockTCP,omitempty"`
	// Seccomp installs the seccomp filter (installSeccomp), refusing
	// unix sockets if NoUnix and Multipath TCP if NoMPTCP.
	Seccomp bool `json:"seccomp,omitempty"`
	NoUnix  bool `json:"noUnix,omitempty"`
	NoMPTCP bool `json:"noMPTCP,omitempty"`
}

// mptcpFilter is false only in a test that shows what Landlock alone
// leaves open.
var mptcpFilter = true

// rlimit is one resource limit and the feature it enforces.
type rlimit struct {
	Feature  string `json:"feature"`
	Resource int    `json:"resource"`
	Cur      uint64 `json:"cur"`
	Max      uint64 `json:"max"`
}

// reply is one message from the helper: the proxy listener (its fd rides
// along as SCM_RIGHTS), the enforcement report just before exec, or why
// it did not exec. The helper's end closes on exec, which the daemon reads
// as success.
type reply struct {
	Listener bool         `json:"listener,omitempty"`
	Report   *Enforcement `json:"report,omitempty"`
	Err      string       `json:"err,omitempty"`
}
