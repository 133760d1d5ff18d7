package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"text/tabwriter"

	"mcpx.dev/mcpx/api"
)

// tools is `mcpx tools [server] [--json]`: a table of server, tool and the
// first line of the description. Servers that fail are reported on stderr
// after the table, and make the exit code 4.
func tools(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "tools")
	brokerAddr := brokerFlag(fs)
	asJSON := fs.Bool("json", false, "print the broker's JSON answer")
	var co callerOpts
	fs.StringVar(&co.cwd, "cwd", "", "list as a caller in this directory (default $PWD)")
	fs.StringVar(&co.session, "session", "", "the caller's session id (default $MCPX_SESSION_ID)")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return usageError(c, fs, "want at most one server name")
	}
	bc, err := newBrokerClient(c, *brokerAddr)
	if err != nil {
		return report(c, err)
	}
	h, err := bc.callerHeaders(co)
	if err != nil {
		return report(c, err)
	}
	var list api.ToolList
	var raw []byte
	if len(pos) == 1 {
		var one struct {
			Server string            `json:"server"`
			Tools  []json.RawMessage `json:"tools"`
		}
		err = bc.getJSON(ctx, "/v1/servers/"+url.PathEscape(pos[0])+"/tools", h, &one, &raw)
		for _, t := range one.Tools {
			list.Tools = append(list.Tools, withServer(one.Server, t))
		}
	} else {
		err = bc.getJSON(ctx, "/v1/tools", h, &list, &raw)
	}
	if err != nil {
		return report(c, err)
	}
	if *asJSON {
		fmt.Fprintf(c.stdout, "%s\n", strings.TrimRight(string(raw), "\n"))
	} else {
		printTools(c, list.Tools)
	}
	for _, p := range list.Errors {
		fmt.Fprintf(c.stderr, "mcpx: %s\n", problemText(p))
	}
	if len(list.Errors) > 0 {
		return exitFailed
	}
	return exitOK
}

type toolRow struct {
	Server      string `json:"server"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// withServer tags a tool from a one-server listing like /v1/tools does.
func withServer(server string, tool json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(tool, &m) != nil {
		return tool
	}
	m["server"], _ = json.Marshal(server)
	b, _ := json.Marshal(m)
	return b
}

func printTools(c *cli, tools []json.RawMessage) {
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTOOL\tDESCRIPTION")
	for _, t := range tools {
		var r toolRow
		if json.Unmarshal(t, &r) != nil {
			continue
		}
		desc, _, _ := strings.Cut(strings.TrimSpace(r.Description), "\n")
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Server, r.Name, desc)
	}
	tw.Flush()
}
