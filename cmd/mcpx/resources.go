package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/suggest"
)

// The commands over a server's resources and prompts: `mcpx resources`,
// `mcpx resource`, `mcpx prompts`, `mcpx prompt` (completion is in
// complete.go).

// listed are the members of a listed resource, template or prompt the
// tables show.
type listed struct {
	URI         string `json:"uri"`
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name"`
	Title       string `json:"title"`
	MimeType    string `json:"mimeType"`
	Description string `json:"description"`
	Arguments   []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Required    bool   `json:"required"`
	} `json:"arguments"`
}

// serverCommand is a command on one server, started: flags parsed, the
// broker client and the caller made.
type serverCommand struct {
	bc     *client.Client
	caller client.Caller
	server string
	args   []string // the positional arguments after the server
	json   bool     // --json
}

// printedJSON prints raw, the broker's answer, when --json was given.
func (sc *serverCommand) printedJSON(c *cli, raw []byte) bool {
	if sc.json {
		fmt.Fprintf(c.stdout, "%s\n", bytes.TrimRight(raw, "\n"))
	}
	return sc.json
}

// startServerCommand declares the common flags (--broker, --no-autostart,
// --json, the caller's) on fs, parses args and connects. The server comes
// first, then between min and max more arguments (max -1: any number).
// ok false: return code.
func startServerCommand(ctx context.Context, c *cli, fs *flag.FlagSet, args []string, min, max int) (*serverCommand, int, bool) {
	brokerAddr := brokerFlag(fs)
	noAutostart := autostartFlag(fs)
	asJSON := fs.Bool("json", false, "print the broker's JSON answer")
	co := callerFlags(fs, "act as a caller in this directory")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return nil, code, false
	}
	if len(pos) < 1+min || max >= 0 && len(pos) > 1+max {
		return nil, usageError(c, fs, "want %s", synopsis(fs)), false
	}
	bc, caller, err := callerClient(ctx, c, brokerAddr, *noAutostart, co)
	if err != nil {
		return nil, report(c, err), false
	}
	return &serverCommand{bc: bc, caller: caller, server: pos[0], args: pos[1:], json: *asJSON}, 0, true
}

// synopsis is a command's synopsis without its flags.
func synopsis(fs *flag.FlagSet) string {
	name := strings.TrimPrefix(fs.Name(), "mcpx ")
	for _, cmd := range commands() {
		if cmd.name == name {
			return strings.TrimSpace(flagGroups.ReplaceAllString(cmd.args, ""))
		}
	}
	return name
}

// flagGroups are the optional flags of a synopsis: "[--json] ", "[-o file] ".
var flagGroups = regexp.MustCompile(`\[-[^\]]*\] *`)

// notAmong is the error for a name that is not one of names, with a
// did-you-mean.
func notAmong(msg, name string, names []string, hint string) error {
	if s := suggest.Closest(name, names); s != "" {
		hint = fmt.Sprintf("did you mean %q? %s", s, hint)
	}
	return fmt.Errorf("%s; %s", msg, hint)
}

// resources is `mcpx resources [--templates] [--json] <server>`.
func resources(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "resources")
	templates := fs.Bool("templates", false, "list the resource templates (URIs with {variables}; read one filled in with mcpx resource)")
	sc, code, ok := startServerCommand(ctx, c, fs, args, 0, 0)
	if !ok {
		return code
	}
	var raw, list []byte
	var err error
	if *templates {
		doc, body, e := sc.bc.ResourceTemplates(ctx, sc.caller, sc.server)
		if err = e; err == nil {
			raw, list = body, doc.ResourceTemplates
		}
	} else {
		doc, body, e := sc.bc.Resources(ctx, sc.caller, sc.server)
		if err = e; err == nil {
			raw, list = body, doc.Resources
		}
	}
	if err != nil {
		return report(c, err)
	}
	if sc.printedJSON(c, raw) {
		return exitOK
	}
	var items []listed
	if err := json.Unmarshal(list, &items); err != nil {
		return report(c, fmt.Errorf("decoding the broker's answer: %w", err))
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	head := "URI"
	if *templates {
		head = "URI TEMPLATE"
	}
	fmt.Fprintf(tw, "%s\tNAME\tMIME TYPE\tDESCRIPTION\n", head)
	for _, it := range items {
		uri := it.URI
		if *templates {
			uri = it.URITemplate
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", uri, it.Name, it.MimeType, firstLine(it.Description))
	}
	tw.Flush()
	return exitOK
}

// resourceContents is a ReadResourceResult's contents.
type resourceContents struct {
	Contents []struct {
		URI      string  `json:"uri"`
		MimeType string  `json:"mimeType"`
		Text     *string `json:"text"`
		Blob     *string `json:"blob"`
	} `json:"contents"`
}

// resource is `mcpx resource [-o file] [--json] <server> <uri>`: text is
// printed; binary (blob) contents are written to -o, or to stdout when it
// is not a terminal, else refused with a hint.
func resource(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "resource")
	var out string
	fs.StringVar(&out, "o", "", "write the contents to this file (binary contents need it when stdout is a terminal)")
	fs.StringVar(&out, "output", "", "the same as -o")
	sc, code, ok := startServerCommand(ctx, c, fs, args, 1, 1)
	if !ok {
		return code
	}
	uri := sc.args[0]
	raw, err := sc.bc.ReadResource(ctx, sc.caller, sc.server, uri)
	if err != nil {
		return report(c, err)
	}
	if sc.printedJSON(c, raw) {
		return exitOK
	}
	var res resourceContents
	if err := json.Unmarshal(raw, &res); err != nil {
		return report(c, fmt.Errorf("the broker's answer is not a ReadResourceResult: %w", err))
	}
	var data []byte
	binary := false
	for _, ct := range res.Contents {
		switch {
		case ct.Text != nil:
			data = append(data, *ct.Text...)
		case ct.Blob != nil:
			b, err := base64.StdEncoding.DecodeString(*ct.Blob)
			if err != nil {
				return report(c, fmt.Errorf("server %s: resource %s: its blob is not base64: %w", sc.server, ct.URI, err))
			}
			data, binary = append(data, b...), true
		}
	}
	switch {
	case out != "":
		if err := os.WriteFile(out, data, 0o644); err != nil {
			return report(c, fmt.Errorf("writing resource %s: %w", uri, err))
		}
		fmt.Fprintf(c.stderr, "wrote %d bytes to %s\n", len(data), out)
	case binary && isTerminal(c.stdout):
		mime := ""
		if len(res.Contents) > 0 {
			mime = res.Contents[0].MimeType + ", "
		}
		fmt.Fprintf(c.stderr, "mcpx resource: %s of server %s is binary (%s%d bytes): not printed to a terminal\n", uri, sc.server, mime, len(data))
		fmt.Fprintln(c.stderr, "write it to a file with -o FILE, redirect stdout, or print it as base64 JSON with --json")
		return exitUsage
	default:
		c.stdout.Write(data) //nolint:errcheck // a closed stdout is the reader's business
		if !binary && len(data) > 0 && data[len(data)-1] != '\n' {
			fmt.Fprintln(c.stdout)
		}
	}
	return exitOK
}

// prompts is `mcpx prompts [--json] <server>`.
func prompts(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "prompts")
	sc, code, ok := startServerCommand(ctx, c, fs, args, 0, 0)
	if !ok {
		return code
	}
	doc, raw, err := sc.bc.Prompts(ctx, sc.caller, sc.server)
	if err != nil {
		return report(c, err)
	}
	if sc.printedJSON(c, raw) {
		return exitOK
	}
	var items []listed
	if err := json.Unmarshal(doc.Prompts, &items); err != nil {
		return report(c, fmt.Errorf("decoding the broker's answer: %w", err))
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROMPT\tARGUMENTS\tDESCRIPTION")
	for _, it := range items {
		var names []string
		for _, a := range it.Arguments {
			n := a.Name
			if !a.Required {
				n = "[" + n + "]"
			}
			names = append(names, n)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", it.Name, strings.Join(names, " "), firstLine(it.Description))
	}
	tw.Flush()
	return exitOK
}

// prompt is `mcpx prompt [--json] <server> <name> [key=value ...]`: the
// prompt's messages, each as "role: text".
func prompt(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "prompt")
	sc, code, ok := startServerCommand(ctx, c, fs, args, 1, -1)
	if !ok {
		return code
	}
	name := sc.args[0]
	values, err := keyValues(sc.args[1:])
	if err != nil {
		return usageError(c, fs, "%v", err)
	}
	if err := checkPromptArgs(ctx, sc, name, values); err != nil {
		return report(c, err)
	}
	raw, err := sc.bc.GetPrompt(ctx, sc.caller, sc.server, name, values)
	if err != nil {
		return report(c, err)
	}
	if sc.printedJSON(c, raw) {
		return exitOK
	}
	var res struct {
		Messages []struct {
			Role    string      `json:"role"`
			Content contentItem `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return report(c, fmt.Errorf("the broker's answer is not a GetPromptResult: %w", err))
	}
	for _, m := range res.Messages {
		fmt.Fprintf(c.stdout, "%s: %s\n", m.Role, describe(m.Content))
	}
	return exitOK
}

// keyValues parses key=value arguments.
func keyValues(args []string) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not key=value, e.g. department=Sales", a)
		}
		out[k] = v
	}
	return out, nil
}

// checkPromptArgs refuses, before the call, a prompt the server does not
// list, an argument it does not take and a required one missing, naming
// it with a did-you-mean.
func checkPromptArgs(ctx context.Context, sc *serverCommand, name string, values map[string]string) error {
	doc, _, err := sc.bc.Prompts(ctx, sc.caller, sc.server)
	if err != nil {
		return err
	}
	var items []listed
	if json.Unmarshal(doc.Prompts, &items) != nil {
		return nil // the server decides
	}
	var names []string
	for _, it := range items {
		names = append(names, it.Name)
		if it.Name != name {
			continue
		}
		var args []string
		for _, a := range it.Arguments {
			args = append(args, a.Name)
		}
		for _, k := range slices.Sorted(maps.Keys(values)) {
			if !slices.Contains(args, k) {
				return notAmong(fmt.Sprintf("server %s: prompt %s takes no argument %q", sc.server, name, k), k, args,
					fmt.Sprintf("`mcpx prompts %s` lists its arguments", sc.server))
			}
		}
		for _, a := range it.Arguments {
			if _, ok := values[a.Name]; a.Required && !ok {
				return fmt.Errorf("server %s: prompt %s needs argument %s (%s=…)", sc.server, name, a.Name, a.Name)
			}
		}
		return nil
	}
	return notAmong(fmt.Sprintf("server %s: no prompt %q", sc.server, name), name, names,
		fmt.Sprintf("`mcpx prompts %s` lists them", sc.server))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
