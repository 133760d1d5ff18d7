package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/wire"
)

// events is `mcpx events [--follow] [--session s] [--json]`: the daemon's lifecycle
// events (spawn, ready, restart, evict, reap, crash, exit, reload,
// reload-refused, backoff, wedged, tool-changed, tool-flagged), the kept
// ones, then with --follow each as it happens.
func events(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "events")
	brokerAddr := brokerFlag(fs)
	noAutostart := autostartFlag(fs)
	follow := fs.Bool("follow", false, "keep printing events as they happen, until interrupted")
	session := fs.String("session", "", "only the events of this session's instances: the session by its key or its name")
	asJSON := fs.Bool("json", false, "print each event as one JSON object per line (--format json)")
	format := fs.String("format", formatText, "text, json, compact (kind, server, instance and reason) or bare (kind and reason)")
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
	bc, err := newBrokerClient(ctx, c, brokerAddr)
	if err != nil {
		return report(c, err)
	}
	if err := autostart(ctx, c, bc, *noAutostart); err != nil {
		return report(c, err)
	}
	err = bc.StreamEvents(ctx, client.EventsQuery{Follow: *follow, Session: *session}, func(ev wire.LifecycleEvent, raw json.RawMessage) error {
		switch *format {
		case formatJSON:
			if ev.Kind == wire.EventGap {
				raw, _ = json.Marshal(ev)
			}
			_, err := fmt.Fprintf(c.stdout, "%s\n", raw)
			return err
		case formatCompact:
			_, err := fmt.Fprintln(c.stdout, strings.Join(slices.DeleteFunc([]string{ev.Kind, ev.Server, ev.Instance, ev.Reason}, func(s string) bool { return s == "" }), " "))
			return err
		case formatBare:
			_, err := fmt.Fprintln(c.stdout, strings.TrimSpace(ev.Kind+" "+ev.Reason))
			return err
		}
		_, err := fmt.Fprintln(c.stdout, eventLine(ev))
		return err
	})
	if err != nil && ctx.Err() == nil {
		return report(c, err)
	}
	return exitOK
}

// eventLine renders one event for people:
//
//	12 15:04:05.000 restart demo global demo-1 pid 4242: executable changed: bytes changed (/usr/local/bin/srv)
func eventLine(ev wire.LifecycleEvent) string {
	s := fmt.Sprintf("%d %s %s", ev.ID, ev.Time.Local().Format("15:04:05.000"), ev.Kind)
	if ev.Kind == wire.EventGap {
		return fmt.Sprintf("%d gap: %s", ev.ID, ev.Reason)
	}
	for _, f := range []string{ev.Server, ev.Key, ev.Instance} {
		if f != "" {
			s += " " + f
		}
	}
	if ev.Pid != 0 {
		s += fmt.Sprintf(" pid %d", ev.Pid)
	}
	if ev.Reason != "" {
		s += ": " + ev.Reason
	}
	if ev.Path != "" {
		s += " (" + ev.Path + ")"
	}
	if !ev.Until.IsZero() {
		s += " until " + ev.Until.Local().Format(time.TimeOnly)
	}
	if ev.Tool != "" {
		s += toolEventText(ev)
	}
	return s
}
