// Package deploy renders and installs what runs mcpx as a user's service and
// wires it into MCP clients: a systemd user unit or a launchd agent
// (never root: the daemon is per-user and its children run as that user);
// for each client (Claude Code, codex, opencode, Cursor, VS Code, Claude
// Desktop) the MCP server entry mcpx in its config, the stdio bridge
// `mcpx mcp` or Streamable HTTP ([Server]); and for the agent harnesses
// among them an instructions section and a session hook.
//
//	p, _ := deploy.ServicePart(deploy.Linux, deploy.ServiceFile(deploy.Linux, home, ""), deploy.Service{
//		Binary: "/usr/local/bin/mcpx", StateDir: home + "/.local/state/mcpx",
//	})
//	rec, _ := deploy.LoadRecords(stateDir)
//	results, err := rec.Install([]deploy.Part{p}, dryRun)
//
// # Edits are the user's
//
// Everything mcpx writes is a [Part]: a whole file, a marked section of a
// shared file (CLAUDE.md, AGENTS.md), one entry of a JSON file (a hook, the
// mcpx member of a client's mcpServers), or one TOML table (codex's
// [mcp_servers.mcpx]).
// [Records] keeps a hash of each part as mcpx last wrote it, in
// installed.json in the state directory. An install writes a part that is
// absent, or that is still as mcpx wrote it; a part that differs (the user
// edited it, or wrote it before mcpx) is reported with a diff and never
// overwritten. A part already as wanted is left as is, so a second install
// is a no-op and a section never appears twice. Uninstall removes only what
// is still as mcpx wrote it.
//
// # Tokens
//
// An HTTP entry may carry the daemon's token in a header. A file it is
// written into is made 0600 whatever its mode was ([Part.Private]), and
// what install prints shows tokens as <secret> ([Part.Shown]).
//
// # Hardening
//
// The systemd unit hides none of the user's files from their own broker:
// NoNewPrivileges, ProtectSystem=strict (the file system read-only but for
// the state directory, Service.Writable, /tmp, /var/tmp and the user's
// runtime directory), the kernel and hostname protections, a private
// keyring, and seccomp filters that cost a user's tools nothing (SUID/SGID
// files, realtime, personality, native system calls only, no clock,
// module, reboot, swap, raw I/O or obsolete calls, Internet, unix and
// netlink sockets only). No PrivateTmp: it hid /tmp worktrees and
// ssh-agent sockets. What else is left out, and why, is in the template's
// comment. RuntimeDirectory=mcpx holds the socket. It names the state
// directory with ReadWritePaths rather than StateDirectory=, whose user-unit
// base moved from $XDG_CONFIG_HOME to $XDG_STATE_HOME in systemd 254.
//
// # Service managers
//
// [Manager] drives systemctl --user or launchctl after a service
// definition is written or before it is removed, says where the service
// logs, and asks whether it is enabled and running. Where no manager can be
// reached (no systemctl on PATH, no user manager running) it prints the
// commands for the user instead. Its command runner is a field, so its
// tests run without systemd. [Manager.InstallService],
// [Manager.UninstallService] and [Manager.Status] are `mcpx service`'s
// flows: the definition written (never over the user's edits), then the
// manager's commands for what changed.
//
// # Which entry, which binary
//
// [ServerFor] decides the entry `mcpx install` writes: the stdio bridge
// with the broker flags passed on, or with --http the running daemon's
// loopback URL and token (read by the caller from the daemon record) or
// the broker's URL. [Executable] is the binary a unit or hook runs,
// refusing `go run`'s temporary build ([CheckBinary]).
package deploy
