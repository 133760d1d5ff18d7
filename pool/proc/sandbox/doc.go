// Package sandbox confines one child process to a Policy, with what the
// Linux kernel enforces: Landlock, user, IPC and network namespaces, a
// seccomp filter, rlimits and cgroups. It knows processes and paths, not
// servers, scopes or callers: the policy arrives resolved.
//
//	p := sandbox.Policy{
//		Read:   append(sandbox.SystemRead(), "/usr/lib/node_modules/server-x", root),
//		Write:  append([]string{root, tmpdir}, sandbox.Devices()...),
//		Env:    []string{"PATH=/usr/bin:/bin", "HOME=" + tmpdir, "TMPDIR=" + tmpdir},
//		Limits: sandbox.Limits{Memory: 1 << 30, Processes: 256, OpenFiles: 1024},
//	}
//	cmd := exec.Command("/usr/bin/node", "/usr/lib/node_modules/server-x/index.js")
//	cell, err := sandbox.Prepare(cmd, p) // Enforce mode: an error names what the kernel lacks
//	...
//	err = cmd.Start()
//	enforcement, err := cell.Started(ctx) // confined and exec'd, or an error
//	...
//	cmd.Wait()
//	reason := cell.Limit(cmd.ProcessState) // "limit: memory 1GiB", or ""
//	cell.Close()                           // kills what is left in its cgroups
//
// # How a child starts
//
// Go's os/exec has no hook between fork and exec, so Prepare rewrites the
// command to start a helper: this very binary (os.Executable), entered
// through MaybeExec, which cmd/mcpx and this package's tests call first
// thing. The helper is started in a user namespace of its own (the
// daemon's uid and gid mapped to themselves, nothing else), with an IPC
// namespace and, for NetworkNone and NetworkProxy, a network namespace.
// Started moves it into the child's cgroups, then sends it the request
// (the Policy, argv, and what to do) on an inherited unix socket — never
// in argv, which /proc shows, nor in the environment, which the child
// would inherit. The helper brings lo up, makes the proxy's listener on
// its own 127.0.0.1 and sends it back (SCM_RIGHTS), sets no_new_privs,
// installs the seccomp filter, restricts itself with Landlock, sets the
// rlimits, drops every capability, reports, and execs the program with
// exactly Policy.Env. The socket closes on exec: that is how Started knows
// the program runs. The child keeps the helper's pid; nothing of the
// helper stays. Everything it sets is inherited by what the child starts
// and cannot be undone by it.
//
// # What is enforced, and by what
//
//   - Files (Policy.Read, Policy.Write): Landlock, ABI 1 and up (truncation
//     from ABI 3, device ioctls from ABI 5). Everything else is refused,
//     whatever the file modes say, including to root.
//   - Network: NetworkNone and NetworkProxy get a network namespace with
//     only its own loopback; under NetworkProxy the daemon's egress proxy
//     accepts on the listener Cell.Listener returns, the only way out.
//     NetworkLoopback keeps the host's network and limits TCP connect and
//     bind to the listed ports with Landlock (ABI 4), and Multipath TCP,
//     which Landlock's rules miss (seen on 6.18, ABI 7), with the seccomp
//     filter. NetworkAll restricts nothing.
//   - Signals, abstract unix sockets and ptrace: Landlock scopes them to the
//     child's own domain (ptrace from ABI 1, the others from ABI 6). A
//     confined child cannot signal or trace the daemon, an unconfined
//     sibling, or a sibling confined in a domain of its own, and cannot
//     read another process's /proc/PID/environ or mem (ptrace access).
//   - Pathname unix sockets: Landlock from ABI 9; below it, unless
//     Policy.UnixSockets, the seccomp filter refuses the child sockets of
//     its own (socket(2) with AF_UNIX; socketpair(2) stays allowed).
//   - Capabilities: none, even as root and even in its own user namespace
//     (bounding set emptied, SECBIT_NOROOT locked), and no_new_privs: no
//     setuid program or file capability gives any back.
//   - System V IPC and POSIX message queues: an IPC namespace of its own.
//   - io_uring and system calls of a foreign ABI (i386, x32): refused by
//     the seccomp filter.
//   - Memory: a memory cgroup (v1 as root here; v2 where a subtree is
//     delegated to the daemon), whose OOM kill Cell.Limit names; without
//     one, RLIMIT_DATA per process.
//   - Processes: a pids cgroup; without one, RLIMIT_NPROC (counted in the
//     child's own user namespace, so only the child's processes count).
//   - Open files and CPU time: RLIMIT_NOFILE and RLIMIT_CPU, per process.
//     No core dumps (RLIMIT_CORE 0).
//   - Cleanup: Close kills whatever is still in the child's cgroups (a
//     grandchild that left the process group and the session too) and
//     removes them; the namespaces die with their last process, and the
//     proxy listener, which holds the network namespace, is closed by
//     Close. No mount is made.
//
// Plan, and Kernel.Report for `mcpx doctor`, say per feature what this
// kernel enforces. In Enforce mode (the default) Prepare refuses to start a
// child when a feature its policy needs cannot be enforced, with a
// *NotEnforcedError naming it; BestEffort starts it with what there is and
// Started's Enforcement says what was not enforced.
//
// # What is not enforced
//
//   - /proc shows other processes: their command lines, status and the
//     like are readable wherever the file modes allow (there is no PID
//     namespace); their environment, memory and file descriptors are not
//     (Landlock's ptrace rule).
//   - Below Landlock ABI 9 with Policy.UnixSockets, a child can connect to
//     any pathname unix socket it can name: an ssh agent's, a container
//     engine's, the daemon's own. The daemon must refuse a peer whose
//     /proc/PID/ns/user differs from its own: every confined child runs in
//     a user namespace of its own (TestUnixSockets shows both).
//   - NetworkLoopback names ports, not addresses: an allowed port is
//     reachable on every address, on the host and beyond; UDP is not
//     restricted below Landlock ABI 10. Prefer NetworkProxy.
//   - Without a memory cgroup, RLIMIT_DATA limits each process's data
//     mappings, not the memory the child uses: runtimes that map large
//     ranges at start (the Go runtime maps some 120 MiB) need a generous
//     limit, and the Cell cannot tell that the limit ended the child.
//   - Without a pids cgroup, RLIMIT_NPROC does not bind uid 0: as root,
//     Enforce refuses a process limit, and BestEffort leaves it unenforced.
//   - RLIMIT_CPU is per process: a child that spreads its work over many
//     processes uses more CPU in all.
//   - The child keeps the daemon's uid; in its user namespace only that uid
//     is mapped, so files of other owners are reached only through their
//     "other" permission bits, even when the daemon is root.
//   - The child may make user namespaces nested in its own (it cannot map
//     ids in them: /proc is read-only to it). The capabilities it holds
//     there reach only what they own, and Landlock and the seccomp filter
//     still bind it, but the kernel code they open is attack surface.
//   - What the policy allows, the child may misuse.
//
// # Cost
//
// BenchmarkSpawn compares /bin/true started plainly and confined. On a
// loaded two-core VM (2026-12-06) a confined start cost some ten times a
// plain one, in CPU (33–48 ms against 3–4 ms) and in wall time: the helper
// is a Go program, and starting one is most of it (15–20 ms of CPU for
// this package's test binary, 7 ms for an empty Go program). In the mcpx
// binary the helper also runs every package's init: 65–72 ms of CPU up to
// MaybeExec (2026-12-07, loaded), after mcpx's own heavy inits were made
// lazy and the helper given GOGC=off (81–88 ms before); some 15 ms of it
// is a dependency's init (jsonschema/v6 compiling its metaschemas), which
// only not linking it into the helper would save. bench/README.md,
// "Containment's cost (issue 32)", has the figures.
//
// Landlock is called through x/sys/unix, not go-landlock: go-landlock's
// all-thread restriction links libcap's psx, a cgo wrapper around every
// thread the whole binary creates (daemon and helper alike), which also
// forces external linking, for a feature this package never uses (the
// helper restricts the one thread that execs). Its idle memory cost is
// not what it first seemed (bench/README.md, "Idle memory: Landlock
// without psx"): freshly linked, the daemon measured 47–49 MB with psx
// and 46 MB without, but with the binary's pages evicted from the page
// cache before each start both measure 42 MB: the difference was how
// the linker had left the file in the page cache. BenchmarkSpawn's
// confined start is the same too (33–41 cpu-ms before, 34–40 after,
// 2026-12-07). What leaving go-landlock gives up is its maintained table
// of rights per ABI: landlockAdded keeps it, TestLandlockRights checks it
// against the kernel's numbering of the rights (each ABI's filesystem
// rights are the next bits), and TestLandlockRightsKernel against the
// running kernel (its ABI's rights accepted, the next ABI's refused). A
// new ABI adds a row there.
package sandbox
