package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"

	"golang.org/x/term"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/daemon"
	"mcpx.dev/mcpx/deploy/registry"
)

// registryCmd is `mcpx registry search|show|add`: the MCP registry
// (registry.url in the config, the official one by default), read with
// package registry. None needs the daemon; add writes the config file,
// which a running daemon reloads as for any edit.
func registryCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "registry")
	o := registryFlags{
		configPath: fs.String("config", "", "config file: registry.url is read from it, and add writes to it (default $XDG_CONFIG_HOME/mcpx/config.json)"),
		url:        fs.String("registry", "", "the registry's base URL, instead of registry.url in the config"),
		asJSON:     fs.Bool("json", false, "print the registry's JSON (add: the entry written)"),
		limit:      fs.Int("limit", 30, "search: at most this many servers"),
		version:    fs.String("version", "", "show: this version rather than the latest"),
		versions:   fs.Bool("versions", false, "show: list the server's versions"),
		as:         fs.String("as", "", "add: the server's name in the config (default: the registry name's last segment)"),
		use:        fs.String("use", "", "add: what to run: npm, pypi, oci, nuget, nix or remote (default: the first mcpx can run)"),
		force:      fs.Bool("force", false, "add: replace a server of the same name"),
		stateDir:   fs.String("state-dir", "", "add: where npm packages are installed, below registry/npm (default $XDG_STATE_HOME/mcpx)"),
	}
	fs.Var(&o.env, "env", "add: an input of the server, KEY=VALUE: an environment variable, header, {variable} or argument by name (repeatable)")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return usageError(c, fs, "want `search <terms>`, `show <name>` or `add <name>[@version]`")
	}
	sub, rest := pos[0], pos[1:]
	switch {
	case sub == "search" && len(rest) > 0:
	case (sub == "show" || sub == "add") && len(rest) == 1:
	default:
		return usageError(c, fs, "want `search <terms>`, `show <name>` or `add <name>[@version]`")
	}
	client, cfgPath, err := o.client(c)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx: %v\n", err)
		return exitToolError
	}
	switch sub {
	case "search":
		return registrySearch(ctx, c, client, rest, o)
	case "show":
		return registryShow(ctx, c, client, rest[0], o)
	}
	return registryAdd(ctx, c, client, cfgPath, rest[0], o)
}

type registryFlags struct {
	configPath, url, version, as, use, stateDir *string
	asJSON, versions, force                     *bool
	limit                                       *int
	env                                         envFlag
}

// client is the registry client of the config (or --registry) and the
// config file's path.
func (o registryFlags) client(c *cli) (*registry.Client, string, error) {
	var reg config.Registry
	path := *o.configPath
	if _, err := os.Stat(path); path == "" || !errors.Is(err, fs.ErrNotExist) {
		// add creates a --config file that does not exist yet.
		cfg, src, err := daemon.LoadConfig(path, c.getenv)
		if err != nil {
			return nil, "", err
		}
		reg, path = cfg.Registry, cmp.Or(src.Path, src.Looked)
	}
	if *o.url != "" {
		reg = config.Registry{URL: *o.url}
		if err := reg.Check(); err != nil {
			return nil, "", fmt.Errorf("--registry: %w", err)
		}
	}
	return &registry.Client{BaseURL: reg.BaseURL()}, path, nil
}

func registrySearch(ctx context.Context, c *cli, client *registry.Client, terms []string, o registryFlags) int {
	found, err := client.Search(ctx, terms, *o.limit)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx: %v\n", err)
		return exitFailed
	}
	if *o.asJSON {
		raws := make([]json.RawMessage, len(found))
		for i, s := range found {
			raws[i] = s.Raw
		}
		return printJSON(c, map[string]any{"servers": raws})
	}
	if len(found) == 0 {
		fmt.Fprintf(c.stderr, "mcpx: no server in %s matches %s (exit 1)\n", client.BaseURL, strings.Join(quoteAll(terms), " "))
		return exitToolError
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tRUNS AS\tDESCRIPTION")
	for _, s := range found {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Server.Name, s.Server.Version, strings.Join(kinds(&s.Server), ","), oneLine(s.Server.Description))
	}
	tw.Flush()
	return exitOK
}

func kinds(s *registry.ServerJSON) []string {
	var out []string
	for _, w := range registry.Ways(s) {
		out = append(out, w.Kind)
	}
	return out
}

func oneLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

func printJSON(c *cli, v any) int {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx: %v\n", err)
		return exitToolError
	}
	fmt.Fprintf(c.stdout, "%s\n", b)
	return exitOK
}

func registryShow(ctx context.Context, c *cli, client *registry.Client, name string, o registryFlags) int {
	name, version, _ := strings.Cut(name, "@")
	if *o.versions {
		l, err := client.Versions(ctx, name)
		if err != nil {
			fmt.Fprintf(c.stderr, "mcpx: %v\n", err)
			return exitFailed
		}
		if *o.asJSON {
			return printJSON(c, l)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "VERSION\tSTATUS\tLATEST\tPUBLISHED")
		for _, s := range l.Servers {
			latest, published := "", ""
			if m := s.Meta.Official; m != nil {
				published = m.PublishedAt
				if m.IsLatest {
					latest = "latest"
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Server.Version, s.Status(), latest, published)
		}
		tw.Flush()
		return exitOK
	}
	s, err := client.Get(ctx, name, cmp.Or(*o.version, version))
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx: %v\n", err)
		return exitFailed
	}
	if *o.asJSON {
		fmt.Fprintf(c.stdout, "%s\n", s.Raw)
		return exitOK
	}
	printServer(c, s)
	return exitOK
}

func printServer(c *cli, r *registry.ServerResponse) {
	s := &r.Server
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	field := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	field("name", s.Name)
	field("title", s.Title)
	status := r.Status()
	if m := r.Meta.Official; m != nil && m.IsLatest {
		status = strings.TrimPrefix(status+", latest", ", ")
	}
	field("version", s.Version+" ("+cmp.Or(status, "no status")+")")
	field("description", s.Description)
	if s.Repository != nil {
		field("repository", strings.TrimSuffix(s.Repository.URL+"/"+s.Repository.Subfolder, "/"))
	}
	field("website", s.WebsiteURL)
	tw.Flush()
	var example []string
	for i, w := range registry.Ways(s) {
		fmt.Fprintf(c.stdout, "\n%s: %s\n", w.Kind, w.What)
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		for _, v := range w.Inputs {
			var notes []string
			if v.IsRequired {
				notes = append(notes, "required")
			}
			if v.IsSecret {
				notes = append(notes, "secret")
			}
			if v.Default != "" {
				notes = append(notes, "default "+v.Default)
			}
			if len(v.Choices) > 0 {
				notes = append(notes, "one of "+strings.Join(v.Choices, "|"))
			}
			fmt.Fprintf(tw, "  --env %s=…\t%s\t%s\t%s\n", v.Key, v.Where, strings.Join(notes, ", "), oneLine(v.Description))
			if i == 0 && v.IsRequired {
				example = append(example, "--env "+v.Key+"=…")
			}
		}
		tw.Flush()
	}
	fmt.Fprintf(c.stdout, "\nadd it: mcpx registry add %s@%s %s\n", s.Name, s.Version, strings.Join(example, " "))
}

func registryAdd(ctx context.Context, c *cli, client *registry.Client, cfgPath, arg string, o registryFlags) int {
	name, version, _ := strings.Cut(arg, "@")
	state := *o.stateDir
	if state == "" {
		var err error
		if state, err = stateDir(c.getenv); err != nil {
			fmt.Fprintf(c.stderr, "mcpx: %v\n", err)
			return exitToolError
		}
	}
	res, err := registry.Add(ctx, registry.AddOptions{
		Client: client, Name: name, Version: version, As: *o.as, Use: *o.use,
		Config: cfgPath, StateDir: state, Values: o.env.vars, Force: *o.force,
		Prompt: terminalPrompt(c), Log: c.stderr,
	})
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx: %v\n", err)
		if errors.Is(err, registry.ErrNotFound) {
			return exitFailed
		}
		return exitToolError
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(c.stderr, "warning: %s\n", w)
	}
	if *o.asJSON {
		return printJSON(c, map[string]any{"name": res.Name, "config": res.Config, "kind": res.Kind, "entry": res.Entry})
	}
	fmt.Fprintf(c.stdout, "added %s (%s@%s, %s) to %s\n", res.Name, res.Server.Server.Name, res.Server.Server.Version, res.Kind, res.Config)
	fmt.Fprintf(c.stdout, "a running daemon serving that file reloads it by itself; try: mcpx tools %s\n", res.Name)
	return exitOK
}

// terminalPrompt asks for a required input on the terminal, a secret
// without echo; nil when stdin is not a terminal.
func terminalPrompt(c *cli) func(registry.Variable) (string, error) {
	f, ok := c.stdin.(*os.File)
	if !ok || !isTTY(f.Fd()) {
		return nil
	}
	in := bufio.NewReader(f)
	return func(v registry.Variable) (string, error) {
		fmt.Fprintf(c.stderr, "%s (%s", v.Key, v.Where)
		if v.Description != "" {
			fmt.Fprintf(c.stderr, ": %s", v.Description)
		}
		if v.Default != "" {
			fmt.Fprintf(c.stderr, "; default %s", v.Default)
		}
		fmt.Fprint(c.stderr, "): ")
		if v.IsSecret {
			b, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(c.stderr)
			return string(b), err
		}
		line, err := in.ReadString('\n')
		if err != nil && line == "" {
			return "", err
		}
		return strings.TrimRight(line, "\r\n"), nil
	}
}
