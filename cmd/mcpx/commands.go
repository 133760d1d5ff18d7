package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"text/tabwriter"

	"mcpx.dev/mcpx/internal/paths"
	"mcpx.dev/mcpx/internal/suggest"
)

// Exit codes. Scripts rely on them; keep them stable.
const (
	exitOK          = 0 // success
	exitToolError   = 1 // the tool ran and returned isError; also: invalid config, serve failed
	exitUsage       = 2 // bad command line
	exitUnreachable = 3 // the broker is not running or not reachable
	exitFailed      = 4 // the broker answered with an error (problem detail printed)
)

// cli is one invocation's environment. Commands read and write only through
// it, so tests can run them in-process.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// closers release what a command opened for its whole run (an
	// embedded tailnet node), last first, when run returns.
	closers []func()
	// daemon is the daemon the command's broker client chose (paths.Of).
	daemon *paths.Daemon
}

// command is one subcommand.
type command struct {
	name    string
	args    string // synopsis after the name
	summary string
	run     func(ctx context.Context, c *cli, args []string) int
}

func commands() []command {
	return []command{
		{"serve", "[--config F] [--state-dir D] [--socket P] [--listen 127.0.0.1:PORT|off]", "run the broker daemon", serve},
		{"call", "[flags] <server>.<tool> [json|-]", "call a tool through the broker and print its result", call},
		{"tasks", "ls|get <id>|result <id>|cancel <id> [--json]", "list your tasks (calls made with `mcpx call --task`), show one's status, wait for its result, or cancel it", tasksCmd},
		{"tools", "[--json] [server] | pins [server] | approve <server>[.<tool>]", "list the tools of every server, or of one; their pins; approve changed tools", tools},
		{"resources", "[--templates] [--json] <server>", "list a server's resources, or its resource templates", resources},
		{"resource", "[-o file] [--json] <server> <uri>", "read a resource: text is printed, binary written to -o (or a redirected stdout), --json prints the result with base64 blobs", resource},
		{"prompts", "[--json] <server>", "list a server's prompts and their arguments ([optional])", prompts},
		{"prompt", "[--json] <server> <name> [key=value ...]", "get a prompt with its arguments and print its messages", prompt},
		{"complete", "[--json] [--context k=v ...] <server> (--prompt NAME | --resource URI) <arg> [value]", "print a server's completions of a prompt's argument or a resource template's variable, for the value typed so far", complete},
		{"mcp", "[--server S] [--broker B [--tsnet]] [--cwd D]", "serve the broker's MCP endpoint on stdin/stdout, for MCP clients that start a command (Claude Desktop, Cursor, Codex)", mcpCmd},
		{"search", "[--tag t] [--explain] [--json] <terms>", "search every server's tools by name, tag, server and description (exit 1: nothing matches)", searchCmd},
		{"catalog", "[--budget N] [--bias Q] [--json]", "every server with its tool count, then tool signatures within a token budget", catalogCmd},
		{"sessions", "ls [--json]|show <s>|stop <s>|set <s> [--idle 1h] [--name n]|watch <s>", "list, show, stop, name or watch the sessions (<s>: a key or a name): instances keyed by a session, parent session, lease or pid", sessionsCmd},
		{"lease", "run [--ttl 30s] [--json] -- <cmd> [args...]", "run a command under a lease ($MCPX_LEASE), renewed while it runs and released when it exits", leaseCmd},
		{"run", "[--runtime deno|bun|node] [--export fn] [--json-args JSON] [--json] <file|name> [args...] [-- args...]", "run a script on deno, bun or node with the generated client importable as \"mcpx\"; run's flags go anywhere before --, the script's after it; the exit code is the script's", runCmd},
		{"exec", "[run's flags] ['<snippet>'|-] [args...] [-- args...]", "run a TypeScript/JavaScript snippet as the body of an async function with every server's client in scope, printing what it returns as JSON (the snippet from stdin if - or absent)", execCmd},
		{"scripts", "[--json]", "list the named scripts of the config chain (scripts/ beside .config/mcpx or .mcpx from here up, then the user's), with what each shadows", scriptsCmd},
		{"status", "[--json]", "list the running server instances", status},
		{"stats", "[--since 1h] [--by server|tool|caller] [--json]", "count, failures, failure rate and p50/p95/p99 duration of the calls in the daemon's call log", statsCmd},
		{"events", "[--follow] [--session s] [--json]", "print the daemon's lifecycle events (spawn, restart, crash, ...)", events},
		{"log", "[--since 1h] [--server s] [--session s] [--level warn] [--follow] [--json]", "print the daemon's log records (admin)", logCmd},
		{"stop", "<instance-id>", "stop one instance", stop},
		{"daemons", "[--json]", "list the daemons (the default one and one per --config), from their records: pid, uptime, instances, config, socket; stale when the pid is gone", daemonsCmd},
		{"daemon", "stop [--force]|info|upgrade [--binary PATH] [--json]", "stop the daemon (--force: no drain, every child stopped at once), show its pid, socket, URL, config and files, or upgrade it in place", daemonCmd},
		{"restart", "[--json] <server>", "drain and replace every instance of a server: calls in flight finish on the old children", restartCmd},
		{"refresh", "[--json] [server]", "drop the schema cache of a server (or of all) and list the tools of their running children again", refreshCmd},
		{"reload", "", "make the daemon read its config again (a config with errors is refused)", reloadCmd},
		{"nix", "ls|refresh <server>|gc [--json]", "list nix: servers with their locked rev and store path, re-resolve one (its instances are replaced), or drop unused cache entries", nixCmd},
		{"remote", "add <name> [address] [--tsnet] [--token-file F] [--default] | ls [--json] | rm <name> | default [<name>|--none]", "save brokers on other machines by name in the client config; `mcpx --remote <name> <command>` (or $MCPX_REMOTE, or the default remote) talks to one", remoteCmd},
		{"fleet", "ls [--json] [--tag t | --probe] [--tsnet] [--broker B]", "list the brokers on the tailnet (tagged tag:mcpx, or found by probing) with their servers, instances and health", fleetCmd},
		{"auth", "login <server> [--no-browser] [--port N] | status [--json] | logout <server> | client-metadata <https-url> [--port N] [--serve ADDR] | approve <code> [--servers a,b] [--roots DIR,…] [--ttl 8h] [--deny]", "sign in to a url server behind OAuth (the browser and its redirect on this machine), show the sign-ins, sign out, or print (or serve) mcpx's client metadata document for the URL you publish it at (docs/oauth.md); approve a client's sign-in on the public face by its code (docs/public.md)", authCmd},
		{"whoami", "[--json]", "show how the broker sees this caller: identity and rights", whoamiCmd},
		{"sandbox", "show <server> [--cwd D] [--json]", "show what would confine the child that serves this caller there: paths read and written, network, environment names, limits, and what this kernel enforces", sandboxCmd},
		{"token", "mint --sub NAME --servers a,b [--roots …] [--scopes …] [--tools …] [--rate 100/m [--burst N]] [--ttl 24h] [--admin] | add NAME | ls [--json] | revoke <id|name> | rotate", "mint, list, revoke signed bearer tokens, or rotate their signing key; add or revoke the owner's named tokens for loopback TCP; list the public face's OAuth clients and their tokens, and revoke a client or a sign-in by id (docs/public.md)", tokenCmd},
		{"config", "check|show|init [--config F] | schema | --sources | --defaults", "validate or print the configuration, print its JSON Schema, write the schema beside it (and a config naming it, if none), or list the config files in force here", configCmd},
		{"clientgen", "ts [--servers a,b] [-o file]", "write the typed TypeScript client of the broker's tools (served at /v1/clients/typescript)", clientgenCmd},
		{"types", "[--no-instructions] <server>[.<tool>]", "print the TypeScript declarations of a server's tools, or of one, with its instructions and prelude", typesCmd},
		{"openapi", "", "print the broker's OpenAPI 3.1 document (the daemon serves it at /openapi.json)", openapiCmd},
		{"service", "install|uninstall|status [--dry-run] [--binary B] [--config F] [--state-dir D] [--tailnet ...]", "run the daemon as this user's service (systemd user unit, launchd agent); never overwrites a file you edited", serviceCmd},
		{"install", "claude|codex|opencode|cursor|vscode|claude-desktop [--http] [--broker B] [--dry-run] [--uninstall] | --list", "add mcpx to an MCP client as its MCP server mcpx (and an agent harness's instructions section and session hook); never overwrites what you edited", installCmd},
		{"registry", "search <terms> [--limit N] | show <name>[@version] [--versions] | add <name>[@version] [--as NAME] [--env K=V]... [--use npm|pypi|oci|nuget|nix|remote] [--force] [--config F] [--json]", "find servers in the MCP registry (registry.url; the official one by default), show one, or add one to the config pinned to its version (npm installed once, run with node)", registryCmd},
		{"doctor", "[--json] [--config F] [--tailnet ...]", "check the config, state directory, socket, tailnet, nix and that every server starts; print each problem with its fix", doctorCmd},
		{"setup-prompt", "", "print setup instructions written for an agent", setupPromptCmd},
		{"hook", "claude|codex", "the session hook `mcpx install` registers: reads the harness's SessionStart input on stdin", hookCmd},
		{"demo-server", "[--failure-flags]", "run the built-in demo MCP server on stdin/stdout", demoServer},
		{"help", "[command]", "show this help, or a command's flags", nil}, // handled by run
	}
}

// run is mcpx's main, minus the process: it returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runCLI(ctx, &cli{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}, args)
}

// runCLI runs the command of args in c's environment.
func runCLI(ctx context.Context, c *cli, args []string) int {
	defer func() {
		for _, f := range slices.Backward(c.closers) {
			f()
		}
	}()
	if len(args) == 0 {
		usage(c.stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		// `mcpx help call` shows call's flags; a help flag after help
		// (`mcpx help -h`, `mcpx -h -h`) is the general usage, never a loop.
		if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") && rest[0] != "help" {
			cmd, ok := lookup(rest[0])
			if !ok {
				return unknownCommand(c, rest[0])
			}
			c.stderr = c.stdout // help asked for goes to stdout
			return cmd.run(ctx, c, []string{"-h"})
		}
		usage(c.stdout)
		return exitOK
	}
	if strings.HasPrefix(name, "-") {
		if i := commandIndex(args); i > 0 {
			// Flags before the command (`mcpx --no-autostart status`) are
			// the command's: its flag set takes them after its name.
			cmd, _ := lookup(args[i])
			return cmd.run(ctx, c, append(slices.Clone(args[:i]), args[i+1:]...))
		}
		fmt.Fprintf(c.stderr, "mcpx: no command after %s\nrun `mcpx help` for the commands\n", strings.Join(args, " "))
		return exitUsage
	}
	if cmd, ok := lookup(name); ok {
		return cmd.run(ctx, c, rest)
	}
	return unknownCommand(c, name)
}

// commandIndex is the index of the first of args that names a command, or
// -1. A flag's value that is a command's name is taken for the command:
// `mcpx --broker status` is not a broker called status.
func commandIndex(args []string) int {
	for i, a := range args {
		if a == "--" {
			return -1
		}
		if _, ok := lookup(a); ok {
			return i
		}
	}
	return -1
}

// lookup finds the subcommand called name.
func lookup(name string) (command, bool) {
	for _, cmd := range commands() {
		if cmd.name == name && cmd.run != nil {
			return cmd, true
		}
	}
	return command{}, false
}

// unknownCommand is a short usage error: the name, the command it was
// probably meant to be, and where the list is (not the whole usage).
func unknownCommand(c *cli, name string) int {
	var names []string
	for _, cmd := range commands() {
		names = append(names, cmd.name)
	}
	fmt.Fprintf(c.stderr, "mcpx: unknown command %q", name)
	if s := suggest.Closest(name, names); s != "" {
		fmt.Fprintf(c.stderr, "; did you mean %q?", s)
	}
	fmt.Fprintln(c.stderr, "\nrun `mcpx help` for the commands")
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "mcpx brokers MCP servers: one daemon, scoped pooled children, many callers.")
	fmt.Fprintln(w, "\nUsage: mcpx <command> [arguments]   (flags may come before or after the command)\n\nCommands:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, cmd := range commands() {
		fmt.Fprintf(tw, "  %s\t%s\n", cmd.name, cmd.summary)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nRun `mcpx help <command>` for a command's flags.")
	fmt.Fprintln(w, "\nExit codes: 0 ok, 1 the tool returned an error (or the config is invalid),")
	fmt.Fprintln(w, "2 usage, 3 broker unreachable, 4 the call failed.")
}

// newFlags returns a flag set for a subcommand whose usage names its synopsis.
func newFlags(c *cli, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("mcpx "+name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	var synopsis, summary string
	for _, cmd := range commands() {
		if cmd.name == name {
			synopsis, summary = cmd.args, cmd.summary
		}
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: mcpx %s %s\n\n%s.\n", name, synopsis, capitalize(summary))
		if hasFlags(fs) {
			fmt.Fprintln(fs.Output(), "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// parseFlags parses args allowing flags after positional arguments
// (`mcpx call demo.echo '{}' --json`); "--" ends flag parsing. It returns the
// positional arguments, or the exit code to return: 0 for -h, 2 for errors.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, int, bool) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK, false
			}
			return nil, exitUsage, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, 0, true
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), 0, true
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// usageError prints a usage error and returns exitUsage.
func usageError(c *cli, fs *flag.FlagSet, format string, a ...any) int {
	fmt.Fprintf(c.stderr, "mcpx %s: %s\n", strings.TrimPrefix(fs.Name(), "mcpx "), fmt.Sprintf(format, a...))
	fmt.Fprintf(c.stderr, "run `mcpx help %s` for usage\n", strings.TrimPrefix(fs.Name(), "mcpx "))
	return exitUsage
}

// version is the module version the binary was built from.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
