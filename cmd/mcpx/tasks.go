package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/wire"
)

// startTask is `mcpx call --task`: the call runs as a task; its id goes to
// stdout (the whole Task with --json), so that a script can keep it.
func startTask(ctx context.Context, c *cli, bc *client.Client, caller client.Caller, server, tool string, body []byte, asJSON bool) int {
	t, raw, err := bc.StartTask(ctx, caller, server, tool, body)
	if err != nil {
		return report(c, err)
	}
	if asJSON {
		fmt.Fprintf(c.stdout, "%s\n", strings.TrimRight(string(raw), "\n"))
		return exitOK
	}
	fmt.Fprintln(c.stdout, t.ID)
	fmt.Fprintf(c.stderr, "task %s %s; `mcpx tasks result %s` waits for its result\n", t.ID, t.Status, t.ID)
	return exitOK
}

// tasksCmd is `mcpx tasks ls | get <id> | result <id> | cancel <id>`.
func tasksCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "tasks")
	brokerAddr := brokerFlag(fs)
	asJSON := fs.Bool("json", false, "print the broker's JSON answer (result: the raw CallToolResult)")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	switch {
	case len(pos) == 1 && pos[0] == "ls":
	case len(pos) == 2 && (pos[0] == "get" || pos[0] == "result" || pos[0] == "cancel"):
		if !strings.HasPrefix(pos[1], "task-") {
			return usageError(c, fs, "%q is not a task id: ids begin with task- (`mcpx tasks ls` lists yours)", pos[1])
		}
	default:
		return usageError(c, fs, "want `ls`, `get <id>`, `result <id>` or `cancel <id>`")
	}
	bc, err := newBrokerClient(ctx, c, brokerAddr)
	if err != nil {
		return report(c, err)
	}
	var raw []byte
	switch pos[0] {
	case "ls":
		var doc *wire.TaskList
		if doc, raw, err = bc.Tasks(ctx); err == nil && !*asJSON {
			printTasks(c, doc.Tasks, time.Now())
			return exitOK
		}
	case "get", "cancel":
		get := bc.Task
		if pos[0] == "cancel" {
			get = bc.CancelTask
		}
		var doc *wire.Task
		if doc, raw, err = get(ctx, pos[1]); err == nil && !*asJSON {
			printTask(c, doc)
			return exitOK
		}
	case "result":
		res, err := bc.TaskResult(ctx, pos[1])
		if err != nil {
			return report(c, err)
		}
		return printResult(c, res, *asJSON)
	}
	if err != nil {
		return report(c, err)
	}
	fmt.Fprintf(c.stdout, "%s\n", strings.TrimRight(string(raw), "\n"))
	return exitOK
}

func printTasks(c *cli, list []wire.Task, now time.Time) {
	if len(list) == 0 {
		fmt.Fprintln(c.stdout, "no tasks (`mcpx call --task <server>.<tool>` starts one)")
		return
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSERVER\tTOOL\tSTATUS\tAGE\tMESSAGE")
	for _, t := range list {
		age := "-"
		if t.Created != nil {
			age = human(now.Sub(*t.Created))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Server, t.Tool, t.Status, age, orDash(t.StatusMessage))
	}
	tw.Flush()
}

func printTask(c *cli, t *wire.Task) {
	fmt.Fprintf(c.stdout, "task:    %s\n", t.ID)
	fmt.Fprintf(c.stdout, "tool:    %s.%s\n", t.Server, t.Tool)
	fmt.Fprintf(c.stdout, "status:  %s\n", t.Status)
	if t.StatusMessage != "" {
		fmt.Fprintf(c.stdout, "message: %s\n", t.StatusMessage)
	}
	if t.TTL != "" {
		fmt.Fprintf(c.stdout, "ttl:     %s\n", t.TTL)
	}
}
