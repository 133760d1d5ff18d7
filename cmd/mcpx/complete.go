package main

import (
	"context"
	"encoding/json"
	"fmt"

	"mcpx.dev/mcpx/wire"
)

// complete is `mcpx complete <server> (--prompt NAME | --resource URI) ARG
// [VALUE] [--context k=v ...]`: the server's completions (MCP
// completion/complete) of argument ARG of prompt NAME, or of variable ARG
// of the resource template URI (as `mcpx resources --templates` lists it),
// for what has been typed so far (VALUE, default empty), one a line.
func complete(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "complete")
	promptName := fs.String("prompt", "", "complete an argument of this prompt")
	templateURI := fs.String("resource", "", "complete a variable of this resource template (its uriTemplate)")
	known := map[string]string{}
	fs.Func("context", "an argument already chosen, key=value, which the server may use to narrow the completion (repeatable)", func(s string) error {
		kv, err := keyValues([]string{s})
		for k, v := range kv {
			known[k] = v
		}
		return err
	})
	sc, code, ok := startServerCommand(ctx, c, fs, args, 1, 2)
	if !ok {
		return code
	}
	req := wire.CompleteRequest{Argument: wire.CompleteArgument{Name: sc.args[0]}}
	if len(sc.args) > 1 {
		req.Argument.Value = sc.args[1]
	}
	switch {
	case (*promptName == "") == (*templateURI == ""):
		return usageError(c, fs, "want exactly one of --prompt NAME and --resource URI")
	case *promptName != "":
		req.Ref = wire.CompleteRef{Type: wire.RefPrompt, Name: *promptName}
	default:
		req.Ref = wire.CompleteRef{Type: wire.RefResource, URI: *templateURI}
	}
	if len(known) > 0 {
		req.Context = &wire.CompleteContext{Arguments: known}
	}
	raw, err := sc.bc.Complete(ctx, sc.caller, sc.server, req)
	if err != nil {
		return report(c, err)
	}
	if sc.printedJSON(c, raw) {
		return exitOK
	}
	var res struct {
		Completion struct {
			Values  []string `json:"values"`
			Total   int      `json:"total"`
			HasMore bool     `json:"hasMore"`
		} `json:"completion"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return report(c, fmt.Errorf("the broker's answer is not a CompleteResult: %w", err))
	}
	for _, v := range res.Completion.Values {
		fmt.Fprintln(c.stdout, v)
	}
	if n := len(res.Completion.Values); res.Completion.Total > n {
		fmt.Fprintf(c.stderr, "(%d of %d shown; type more of the value to narrow them)\n", n, res.Completion.Total)
	} else if res.Completion.HasMore {
		fmt.Fprintln(c.stderr, "(more not shown; type more of the value to narrow them)")
	}
	return exitOK
}
