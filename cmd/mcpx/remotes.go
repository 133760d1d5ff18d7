package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"mcpx.dev/mcpx/client"
)

// Remote brokers saved by name in the client config (client.Config.Remotes):
// `mcpx remote add|ls|rm|default`, and which broker a command talks to
// (brokerOpts.resolve). The order, first wins (docs/tailnet.md):
//
//  1. the flags: --broker, or --remote NAME (not both);
//  2. the environment: $MCPX_BROKER, else $MCPX_REMOTE;
//  3. a local daemon named with --config or $MCPX_CONFIG;
//  4. the client config's defaultRemote;
//  5. the local daemon.
//
// --remote local (or $MCPX_REMOTE=local) is step 5 at once.

// resolve fills bo's address, --tsnet and token file from the remote the
// command names, or the default remote when it names no broker.
func (bo *brokerOpts) resolve(c *cli) error {
	if bo.addr != "" && bo.remote != "" {
		return fmt.Errorf("--broker and --remote both name a broker: drop one")
	}
	name := bo.remote
	switch {
	case bo.addr != "":
		return nil
	case name != "":
	case c.getenv("MCPX_BROKER") != "":
		return nil
	case c.getenv("MCPX_REMOTE") != "":
		name = c.getenv("MCPX_REMOTE")
	case bo.config != "" || c.getenv("MCPX_CONFIG") != "":
		return nil
	}
	if name == client.LocalRemote {
		return nil
	}
	cfg, file, err := clientConfig(c)
	if err != nil {
		return err
	}
	if name == "" {
		if name = cfg.DefaultRemote; name == "" {
			return nil
		}
	}
	r, ok := cfg.Remotes[name]
	if !ok {
		return fmt.Errorf("no remote %q in the client config %s (%s): save it with `mcpx remote add %s <address>`", name, file, remoteNames(cfg), name)
	}
	bo.addr, bo.tsnet = r.Broker, bo.tsnet || r.TSNet
	if bo.tokenFile == "" && c.getenv("MCPX_TOKEN") == "" {
		bo.tokenFile = r.TokenFile
	}
	return nil
}

// named reports whether the command names a broker by flag or
// environment (steps 1 and 2), which the default remote does not.
func (bo *brokerOpts) named(c *cli) bool {
	return bo.addr != "" || bo.remote != "" || c.getenv("MCPX_BROKER") != "" || c.getenv("MCPX_REMOTE") != ""
}

func remoteNames(cfg client.Config) string {
	if len(cfg.Remotes) == 0 {
		return "it has none"
	}
	return "it has " + strings.Join(slices.Sorted(maps.Keys(cfg.Remotes)), ", ")
}

func remoteCmd(ctx context.Context, c *cli, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(c.stderr, `usage: mcpx remote add <name> [address] [--tsnet] [--token-file F] [--default]
       mcpx remote ls [--json]
       mcpx remote rm <name>
       mcpx remote default [<name> | --none]

Save brokers by name in the client config (`+"`$MCPX_CLIENT_CONFIG`"+`, else ~/.config/mcpx/client.json)
and reach one with `+"`mcpx --remote <name> <command>`"+` or $MCPX_REMOTE, or make it the default.
The address is a tailnet name (the default: the remote's own name), an http(s) URL or a socket
path. Which broker a command uses, first wins: --broker or --remote, $MCPX_BROKER, $MCPX_REMOTE,
--config or $MCPX_CONFIG (a local daemon), the default remote, the local daemon.
--remote local is the local daemon whatever the default.
`)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	switch args[0] {
	case "add":
		return remoteAdd(c, args[1:])
	case "ls", "list":
		return remoteLs(c, args[1:])
	case "rm", "remove":
		return remoteEdit(c, "rm", args[1:])
	case "default":
		return remoteEdit(c, "default", args[1:])
	}
	fmt.Fprintf(c.stderr, "mcpx remote: unknown subcommand %q: use add, ls, rm or default\n", args[0])
	return exitUsage
}

func remoteAdd(c *cli, args []string) int {
	fs := flag.NewFlagSet("remote add", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	var r client.Remote
	fs.BoolVar(&r.TSNet, "tsnet", false, "reach it through the CLI's own tailnet node, as --tsnet does")
	fs.StringVar(&r.TokenFile, "token-file", "", "the file holding its bearer token (the path is saved, never the token)")
	def := fs.Bool("default", false, "make it the default remote")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) < 1 || len(pos) > 2 {
		fmt.Fprintln(c.stderr, "usage: mcpx remote add <name> [address] [--tsnet] [--token-file F] [--default]")
		return exitUsage
	}
	name := pos[0]
	if err := client.CheckRemoteName(name); err != nil {
		fmt.Fprintf(c.stderr, "mcpx remote add: %v\n", err)
		return exitUsage
	}
	r.Broker = name
	if len(pos) == 2 {
		r.Broker = pos[1]
	}
	if _, tailnet := client.BrokerAddr(r.Broker); r.TSNet && !tailnet && !strings.HasPrefix(r.Broker, "http://") && !strings.HasPrefix(r.Broker, "https://") {
		fmt.Fprintf(c.stderr, "mcpx remote add: --tsnet reaches a broker on the tailnet (a name such as sandbox, or https://sandbox.example.ts.net), not the socket %s\n", r.Broker)
		return exitUsage
	}
	return editClientConfig(c, func(cfg *client.Config) (string, error) {
		if cfg.Remotes == nil {
			cfg.Remotes = map[string]client.Remote{}
		}
		verb := "saved"
		if _, ok := cfg.Remotes[name]; ok {
			verb = "replaced"
		}
		cfg.Remotes[name] = r
		if *def {
			cfg.DefaultRemote = name
			verb += " as the default remote"
		}
		return fmt.Sprintf("%s remote %s (%s)", verb, name, r.Broker), nil
	})
}

// remoteEdit is `remote rm <name>` and `remote default [<name>|--none]`.
func remoteEdit(c *cli, verb string, args []string) int {
	if len(args) != 1 || (verb == "rm" && strings.HasPrefix(args[0], "-")) {
		if verb == "default" && len(args) == 0 {
			cfg, _, err := clientConfig(c)
			if err != nil {
				fmt.Fprintf(c.stderr, "mcpx remote: %v\n", err)
				return exitUsage
			}
			fmt.Fprintln(c.stdout, cfg.DefaultRemote)
			return exitOK
		}
		fmt.Fprintf(c.stderr, "usage: mcpx remote %s\n", map[string]string{"rm": "rm <name>", "default": "default [<name> | --none]"}[verb])
		return exitUsage
	}
	name := args[0]
	return editClientConfig(c, func(cfg *client.Config) (string, error) {
		if verb == "default" && name == "--none" {
			cfg.DefaultRemote = ""
			return "no default remote: commands use the local daemon", nil
		}
		if _, ok := cfg.Remotes[name]; !ok {
			return "", fmt.Errorf("no remote %q (%s)", name, remoteNames(*cfg))
		}
		if verb == "default" {
			cfg.DefaultRemote = name
			return "default remote: " + name, nil
		}
		delete(cfg.Remotes, name)
		if cfg.DefaultRemote == name {
			cfg.DefaultRemote = ""
			return fmt.Sprintf("removed remote %s, the default remote: commands use the local daemon", name), nil
		}
		return "removed remote " + name, nil
	})
}

// editClientConfig reads the client config, lets edit change it, and
// writes it back, printing what edit says it did.
func editClientConfig(c *cli, edit func(*client.Config) (string, error)) int {
	cfg, file, err := clientConfig(c)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx remote: %v\n", err)
		return exitUsage
	}
	said, err := edit(&cfg)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx remote: %v\n", err)
		return exitUsage
	}
	if err := client.SaveConfig(file, &cfg); err != nil {
		fmt.Fprintf(c.stderr, "mcpx remote: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(c.stdout, "%s in %s\n", said, file)
	return exitOK
}

func remoteLs(c *cli, args []string) int {
	fs := flag.NewFlagSet("remote ls", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	asJSON := fs.Bool("json", false, "print the remotes as JSON")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return exitUsage
	}
	cfg, _, err := clientConfig(c)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx remote: %v\n", err)
		return exitUsage
	}
	if *asJSON {
		type row struct {
			Name string `json:"name"`
			client.Remote
			Default bool `json:"default,omitempty"`
		}
		rows := []row{}
		for _, name := range slices.Sorted(maps.Keys(cfg.Remotes)) {
			rows = append(rows, row{name, cfg.Remotes[name], name == cfg.DefaultRemote})
		}
		return printJSON(c, rows)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tBROKER\tTSNET\tTOKEN FILE\tDEFAULT")
	for _, name := range slices.Sorted(maps.Keys(cfg.Remotes)) {
		r := cfg.Remotes[name]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, r.Broker, yesNo(r.TSNet), cmpDash(r.TokenFile), map[bool]string{true: "*"}[name == cfg.DefaultRemote])
	}
	tw.Flush()
	return exitOK
}

func cmpDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
