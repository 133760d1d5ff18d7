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
// command to start a helper: this very binary (os.Executable). Built with
// cgo (helper.PreRuntime), the binary has the helper's C stage: an ELF
// constructor (package internal/helper, cstage_linux.c; runc's nsexec is
// the same idea) that runs when the binary is loaded, before the Go
// runtime starts, and becomes the helper; in every other start it returns
// after one getenv. Built without cgo (the Containerfile's static build), the helper
// is Go: the init of package internal/helper, which imports only errors,
// syscall and unsafe, so Go runs it right after syscall's and before
// every other package's (the spec's order: by import path, among packages
// whose imports are done). MaybeExec, which cmd/mcpx and this package's
// tests call first thing, is left with nothing to do either way. The two
// read the same request, take the same steps and send the same replies.
//
// The helper runs in a user namespace of its own (the daemon's uid and gid
// mapped to themselves, nothing else), with an IPC namespace and, for
// NetworkNone and NetworkProxy, a network namespace. The C stage makes them
// itself (unshare(2), then its own setgroups and id maps), which only a
// single-threaded process can, once it has read the request; the daemon
// starts it like any child. The Go helper is started in them: through
// util-linux's unshare (2.38 and later, which Probe looks for in /usr/bin
// and /bin) where there is one, else by clone flags. A child's cgroup v2
// Prepare makes, and cmd.Start clones the helper into it
// (CLONE_INTO_CGROUP); its v1 cgroups, named for its pid, Started makes.
// Started then sends the helper the request on an inherited unix socket —
// never in argv, which /proc shows, nor in the environment, which the child
// would inherit. The daemon decides every step and sends the system calls'
// arguments (the seccomp filter already assembled, Landlock's rights per
// path), each step naming the features it enforces. The helper moves itself
// into the v1 cgroups (the Go helper, which has threads, is moved by
// Started: see Cost), brings lo up, makes the proxy's listener on its own
// 127.0.0.1 and sends it back (SCM_RIGHTS), sets no_new_privs, installs the
// seccomp filter, restricts itself with Landlock, sets the rlimits, drops
// every capability, reports the steps that failed, and execs the program
// with exactly Policy.Env — unless a step failed whose feature the policy
// needs in Enforce mode: then it reports and exits. The socket closes on
// exec: that is how Started knows the program runs. The child keeps the
// helper's pid; nothing of the helper stays. Everything it sets is inherited
// by what the child starts and cannot be undone by it.
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
// What a confined spawn costs over a plain one (bench/README.md,
// "Containment's cost (issue 32)" and "A helper before the Go runtime",
// has the figures) is three things:
//
//   - The daemon's fork. Go's os/exec vforks (CLONE_VM|CLONE_VFORK) unless
//     the child is cloned into a user namespace: then the daemon's id maps
//     must be written while the child waits, so it forks the whole daemon,
//     copying its page tables, and the daemon takes a copy-on-write fault
//     for every page it writes afterwards — some 500 faults and 20 ms of
//     CPU per confined spawn in the pool's benchmark, 10,000 faults and
//     ~220 ms for a process with a 40 MB heap, on this VM (2026-12-07).
//     The C stage makes its namespaces itself, and without it unshare
//     does, both in the vforked child, which leaves the daemon ~1.5-3 ms
//     over a plain spawn (cgroups, the request). Only a binary without
//     cgo on a system without unshare 2.38 clones the helper into its
//     namespaces and pays that fork.
//   - The helper. The C stage costs an exec of the binary and its dynamic
//     loader up to the constructor, about what /bin/true's costs (mcpx:
//     ~2.5 ms of CPU and ~53 page faults, against 1.6-2.8 ms and 49, and
//     15-18 ms and ~420 for the Go helper up to its check), then its
//     steps: reading the request ~0.2 ms, the namespaces ~0.6 ms,
//     confining itself ~0.55 ms (medians over 300 of BenchmarkSpawn's
//     spawns, 2026-12-07). The Go helper costs the Go runtime's start in a large
//     binary (its itab table, its module data, the dynamic loader, its
//     threads) up to its own package's init, which skips the rest of the
//     binary's inits (mcpx: 59 -> 22 ms of CPU up to the helper; its
//     jsonschema dependency's init alone was ~15 ms), and unshare's exec
//     (~6 ms with the namespaces). BenchmarkSpawn, a confined /bin/true
//     against a plain one, daemon and children: +5.6-6.3 ms with the C
//     stage, +16-20 ms with the Go helper.
//   - The move into the cgroups. Writing a pid to cgroup.procs moves a
//     whole process and takes the kernel's global threadgroup lock, whose
//     write side waits for an RCU grace period: ~5-6 ms of wall time (not
//     CPU) for the first move after a quiet spell on this VM's cgroup v1,
//     4-19 ms on its v2 hierarchy (2026-12-08). So no child is moved that
//     need not be: a v2 cgroup is made before the child and the child
//     cloned into it (~0.1-0.25 ms more than a plain clone); into a v1
//     one the C stage, single-threaded, moves itself by writing "0" to
//     its tasks file, which moves one thread and skips that lock (~0.05
//     ms). A confined spawn of the pool's demo child went from ~7.5 to ~3
//     ms of wall time over a plain one on v1 (bench/README.md, "A cgroup
//     the helper joins itself"). Only the Go helper, which has threads,
//     is still moved into its v1 cgroups by Started.
//   - What confining costs the program itself (Landlock's checks on its
//     opens, the seccomp filter on its system calls, a fresh memory
//     cgroup) and the pool beyond this package's code: not told apart;
//     the pool's benchmark shows ~3.5 ms per spawn more than the helper
//     and the daemon's sandbox code add up to, at load 5.
//
// Not chosen, measured or reasoned out:
//
//   - No helper: confining a locked daemon thread (no_new_privs, seccomp
//     and Landlock are per thread and inherited by a clone) and forking
//     the program from it. Landlock on that thread refuses the write of
//     the child's /proc/PID/uid_map that Go's os/exec makes from it, and
//     the child's loopback and the proxy's listener must be made inside
//     its network namespace, by a process there that holds CAP_NET_ADMIN
//     after its exec: a stage in the child is needed for NetworkNone and
//     NetworkProxy, the default network. rlimits are per process, so they
//     would need a stage too (prlimit(2) after the fork races the exec),
//     and a child forked from a thread that then exits gets its parent-death
//     signal (the Spawner's reason to fork from one long-lived thread).
//   - A helper that is not mcpx (an empty Go program costs ~7 ms, a C one
//     what the C stage costs): no binary is committed, and `go install`
//     of one module builds one command, so mcpx would have to find or
//     build a second one. The C stage is that helper, inside mcpx.
//   - Only the C stage, no Go helper: the Containerfile's static build is
//     without cgo (a static binary needs no libc on the host), and so are
//     cross-compiled ones; they keep the Go helper.
//   - A C stage that leaves to the Go helper what it cannot do: the Go
//     helper can do nothing the C stage cannot (and cannot make its
//     namespaces), so a failure in the C stage is the start's error
//     (ReplyError), as the Go helper's is. The Go helper, asked to make
//     namespaces (a binary without cgo put in place of the daemon's own),
//     refuses.
//   - setns into prepared namespaces: a daemon that is not root cannot
//     join a user namespace (it is multithreaded) nor a network namespace
//     (CAP_SYS_ADMIN in its own user namespace).
//
// The C stage needs cgo, and with it external linking (gcc or clang at
// build time; without a C compiler Go builds without cgo, and the binary
// has the Go helper): the Go toolchain links a package with C files of its
// own only so, by default.
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
