// Package demo is mcpx's built-in MCP server: the `demo` server the daemon
// serves when there is no config file (`mcpx demo-server`), and the real child
// that tests in every package spawn.
//
//	srv := demo.NewServer()                     // an *mcp.Server, for in-memory transports
//	err := demo.Run(ctx, os.Stdin, os.Stdout)   // newline-delimited JSON over stdio
//
// # Tools
//
//	echo {message}            text = message
//	add {a, b}                text = the sum; structuredContent {sum}
//	sleep {ms}                writes "sleeping Nms" to stderr and sleeps; on
//	                          cancellation writes "cancelled sleep" to stderr
//	progress {steps, delayMs} one notifications/progress per step (when the request
//	                          has a progressToken), then "done N"
//	cwd                       the process working directory
//	roots                     the client's roots/list answer as JSON text; "[]" when
//	                          the client has no roots capability
//	env {name}                the value of that environment variable
//	pid                       the process id
//	crash {code, stderr}      writes stderr, then exits with code (default 3), unanswered
//	big {bytes}               a text of exactly that many bytes
//	init                      the exact initialize request line the client sent, and
//	                          its parsed capabilities, as JSON text
//	fail {message}            a result with isError: true
//	strict {n}                "ok", or a JSON-RPC -32602 error unless n > 0 (argument
//	                          validation by the SDK gives isError results instead)
//	stderr {text}             writes text to stderr, returns "ok"
//
// plus the prompt `greet {name}` and the resource `demo://readme`. EnvApps=1
// (a test flag) adds an MCP App, the tool show-card and its ui:// resource
// CardURI, the tool grow, which changes the prompt and resource lists, and
// subscribable resources with the tool touch {uri}, which says one changed.
// EnvProbe=1 (a test flag too) adds read {path}, write {path, text},
// fetch {url, viaProxy} and the hostile tools list {path}, connect {addr},
// spawn {count}, alloc {mib}, signal {pid, signal} and ptrace {pid}, which
// answer the system's error as an isError result: what a confined child's
// tests need to see the kernel refuse (probe.go, hostile.go).
//
// # Failure flags
//
// MaybeServe, and Main with failures set (`mcpx demo-server --failure-flags`),
// honour before serving: EnvExitAtStart=N writes "boom" to stderr and exits
// N; EnvGarbage=1 writes a non-JSON line to stdout; EnvHang=1 never answers
// initialize; EnvEra=stateless|handshake serves one era only (the other's
// opening request is refused with -32601); EnvRequestLog=<file> appends
// each method received to the file (EnvRequestLogPid=1: after the
// server's pid); EnvDiscoverDelay=<duration> answers server/discover only
// after the delay; EnvApps=1 adds the MCP App and subscriptions;
// EnvProbe=1 the probing tools. The daemon's default demo server
// ignores them.
//
// # Re-exec'ing the test binary as a real child
//
// Tests that need a real child process spawn their own test binary with
// EnvServer=1. Call MaybeServe first thing in TestMain:
//
//	func TestMain(m *testing.M) {
//		demo.MaybeServe() // in the child: serves stdio, then exits
//		os.Exit(m.Run())
//	}
//
// and start the child as
//
//	cmd := exec.Command(os.Args[0])
//	cmd.Env = append(os.Environ(), demo.EnvServer+"=1")
//
// The child runs the demo server instead of the tests and exits 0 when its
// stdin reaches EOF.
package demo
