package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/daemon"
	"mcpx.dev/mcpx/internal/defaults"
)

// configCmd is `mcpx config check|show|init [--config F]`, `mcpx config
// schema` (configschema.go) or `mcpx config --sources|--defaults`. check exits 0 and says
// "ok: N servers" and which servers are disabled, or prints every error and
// exits 1 (exitToolError: the command ran and found the config invalid; 2
// stays reserved for usage). Either way the config's warnings go to stderr.
func configCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "config")
	path := fs.String("config", "", "config file (default $XDG_CONFIG_HOME/mcpx/config.json)")
	sources := sourcesFlags(fs)
	showDefaults := fs.Bool("defaults", false, "print every default as one JSON document of the config's shape")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if *showDefaults {
		if len(pos) > 0 || *sources.on {
			return usageError(c, fs, "--defaults takes no `check`, `show` or --sources")
		}
		c.stdout.Write(defaults.Document) //nolint:errcheck // as every print to stdout
		return exitOK
	}
	if *sources.on {
		if len(pos) > 0 {
			return usageError(c, fs, "--sources takes no `check` or `show`")
		}
		return configSources(ctx, c, sources)
	}
	if len(pos) == 1 && pos[0] == "schema" {
		return configSchema(c)
	}
	if len(pos) == 1 && pos[0] == "init" {
		return configInit(c, *path)
	}
	if len(pos) != 1 || (pos[0] != "check" && pos[0] != "show") {
		return usageError(c, fs, "want `check`, `show`, `schema`, `init` or --sources")
	}
	cfg, src, err := daemon.LoadConfig(*path, c.getenv)
	if pos[0] == "check" && *sources.asJSON {
		return checkJSON(c, cfg, src.String(), err)
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx: %v\n", err)
		if ce := (*config.Error)(nil); errors.As(err, &ce) {
			printWarnings(c, ce.Warnings)
		}
		return exitToolError
	}
	if pos[0] == "check" {
		n := len(cfg.Servers)
		fmt.Fprintf(c.stdout, "ok: %d server%s (%s)\n", n, plural(n), src)
		for _, name := range cfg.Disabled {
			fmt.Fprintf(c.stdout, "disabled: %s (not served)\n", name)
		}
		printWarnings(c, cfg.Warnings)
		return exitOK
	}
	printWarnings(c, cfg.Warnings)
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx: printing config: %v\n", err)
		return exitToolError
	}
	fmt.Fprintf(c.stdout, "%s\n", b)
	return exitOK
}

func printWarnings(c *cli, ws []*config.Problem) {
	for _, w := range ws {
		fmt.Fprintf(c.stderr, "warning: %v\n", w)
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// problemDoc is one config problem as `config check --json` prints it.
type problemDoc struct {
	Server string `json:"server,omitempty"`
	Field  string `json:"field,omitempty"`
	Msg    string `json:"msg"`
	Hint   string `json:"hint,omitempty"`
}

func problemDocs(ps []*config.Problem) []problemDoc {
	out := []problemDoc{}
	for _, p := range ps {
		msg := p.Msg
		if msg == "" {
			msg = p.Error()
		}
		out = append(out, problemDoc{Server: p.Server, Field: p.Field, Msg: msg, Hint: p.Hint})
	}
	return out
}

// checkJSON prints `config check --json`'s verdict: exit 0 when the
// config loads, 1 when it does not (as without --json).
func checkJSON(c *cli, cfg *config.Config, src string, err error) int {
	doc := struct {
		OK       bool         `json:"ok"`
		Source   string       `json:"source"`
		Servers  int          `json:"servers"`
		Disabled []string     `json:"disabled"`
		Problems []problemDoc `json:"problems"`
		Warnings []problemDoc `json:"warnings"`
	}{OK: err == nil, Source: src, Disabled: []string{}, Problems: []problemDoc{}, Warnings: []problemDoc{}}
	if err != nil {
		var errs []error
		if ce := (*config.Error)(nil); errors.As(err, &ce) {
			errs, doc.Warnings = ce.Errs, problemDocs(ce.Warnings)
		} else {
			errs = []error{err}
		}
		for _, e := range errs {
			if p := (*config.Problem)(nil); errors.As(e, &p) {
				doc.Problems = append(doc.Problems, problemDocs([]*config.Problem{p})...)
			} else {
				doc.Problems = append(doc.Problems, problemDoc{Msg: e.Error()})
			}
		}
	} else {
		doc.Servers, doc.Disabled, doc.Warnings = len(cfg.Servers), append(doc.Disabled, cfg.Disabled...), problemDocs(cfg.Warnings)
	}
	b, _ := json.Marshal(doc)
	fmt.Fprintf(c.stdout, "%s\n", b)
	if err != nil {
		return exitToolError
	}
	return exitOK
}
