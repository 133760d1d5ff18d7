package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/observe/daemonlog"
)

// logCmd is `mcpx log [--since 1h] [--server s] [--session s] [--level warn]
// [--follow] [--json]`: the daemon's log records (admin), the kept ones, then with
// --follow each as it is written.
func logCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "log")
	brokerAddr := brokerFlag(fs)
	noAutostart := autostartFlag(fs)
	since := fs.String("since", "", "only records since then: a duration back from now (1h) or an RFC 3339 time")
	server := fs.String("server", "", "only records naming this server")
	session := fs.String("session", "", "only records naming this session's key: the session by its key or its name")
	level := fs.String("level", "info", "only records at or above this level: debug, info, warn, error")
	follow := fs.Bool("follow", false, "keep printing records as they are written, until interrupted")
	asJSON := fs.Bool("json", false, "print each record as the daemon wrote it: one JSON object per line (--format json)")
	format := fs.String("format", formatText, "text, json (as written), compact (no time, the level's initial) or bare (the message alone)")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if *asJSON {
		*format = formatJSON
	}
	if msg := checkFormat(*format); msg != "" {
		return usageError(c, fs, "%s", msg)
	}
	if len(pos) > 0 {
		return usageError(c, fs, "unexpected argument %q", pos[0])
	}
	if _, err := daemonlog.ParseLevel(*level); err != nil {
		return usageError(c, fs, "--level: %v", err)
	}
	bc, err := newBrokerClient(ctx, c, brokerAddr)
	if err != nil {
		return report(c, err)
	}
	if err := autostart(ctx, c, bc, *noAutostart); err != nil {
		return report(c, err)
	}
	q := client.LogQuery{Since: *since, Server: *server, Session: *session, Level: *level, Follow: *follow}
	err = bc.Log(ctx, q, func(raw json.RawMessage) error {
		_, err := fmt.Fprintln(c.stdout, formatRecord(*format, raw))
		return err
	})
	if err != nil && ctx.Err() == nil {
		return report(c, err)
	}
	return exitOK
}

// logLine renders one JSON record for people, as slog's text handler
// would, with the time local and short:
//
//	15:04:05.000 WARN child stderr suppressed server=demo lines=120
func logLine(raw json.RawMessage) string {
	var rec map[string]any
	if json.Unmarshal(raw, &rec) != nil {
		return string(raw)
	}
	var b strings.Builder
	if s, ok := rec["time"].(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			b.WriteString(t.Local().Format("15:04:05.000") + " ")
		}
	}
	fmt.Fprintf(&b, "%v %v", rec["level"], rec["msg"])
	dropConsumed(rec)
	delete(rec, "time")
	delete(rec, "level")
	delete(rec, "msg")
	b.WriteString(attrText(rec))
	return b.String()
}
